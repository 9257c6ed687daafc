//! Issue 39 §2: the client's own limits are the client's, never the server's. This file holds
//! one test because it lowers the process's open-file limit while it runs (no other test may
//! run beside it in this binary).

mod common;

use common::hi;
use inferbench_client::{CancellationToken, Client, ClientConfig, RequestMeta};
use inferbench_core::ErrorClass;

/// The highest file descriptor open now.
fn highest_fd() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .unwrap_or(2)
}

fn nofile() -> libc::rlimit {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct passed.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
    r
}

fn set_nofile(r: &libc::rlimit) {
    // SAFETY: setrlimit reads only the struct passed.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, r) }, 0);
}

/// A connect that finds the process out of file descriptors (`EMFILE`) ends as
/// `client_resource`, its message naming `ulimit -n` and saying the limit is the client's: not
/// `connect` (trial: 3,082 of 4,095 warmups failed "connect", exit 3, "check --base-url").
#[tokio::test(flavor = "current_thread")]
async fn out_of_file_descriptors_is_client_resource_not_connect() {
    // A listener that would accept: the failure can only be the client's.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = Client::new(ClientConfig {
        base_url: format!("http://{addr}"),
        model: "m".into(),
        ..Default::default()
    })
    .unwrap();
    let input = hi(Some(1));
    let before = nofile();
    // Room for nothing new: the limit just above the highest descriptor open (the listing's
    // own is closed by then), and every free one below it taken, so the socket the connect
    // needs is refused.
    let highest = highest_fd();
    set_nofile(&libc::rlimit {
        rlim_cur: highest + 1,
        rlim_max: before.rlim_max,
    });
    let mut fillers = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        fillers.push(f);
    }
    let rec = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.send(&input, RequestMeta::default(), &CancellationToken::new()),
    )
    .await;
    drop(fillers);
    set_nofile(&before);
    let rec = rec.expect("the send ended at once");
    assert!(!rec.success);
    assert_eq!(
        rec.error_class,
        Some(ErrorClass::ClientResource),
        "{rec:#?}"
    );
    let msg = rec.error.unwrap_or_default();
    assert!(
        msg.starts_with(&format!(
            "the client could not open a connection to 127.0.0.1:{}: ",
            addr.port()
        )) && msg.ends_with(
            "(the client's own limit, not the server's: raise the open-file limit, \
             `ulimit -n`, or lower the concurrency)"
        ),
        "{msg}"
    );
    assert_eq!(ErrorClass::ClientResource.as_str(), "client_resource");
}
