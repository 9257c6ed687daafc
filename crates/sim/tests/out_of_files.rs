//! Issue 39, fresh tester's finding 1: a sim out of open files (`EMFILE` on accept) left the
//! connections waiting in its backlog for ever (`quickstart` hung at conc 64, its sim in the
//! same process). After [`inferbench_sim::AcceptBackoff::SHED_AFTER`] of failing accepts it
//! sheds them: each is accepted with a descriptor held in reserve and answered 503 naming the
//! limit. Its own test binary: it lowers this process's `RLIMIT_NOFILE`.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

/// Descriptors open in this process (the directory being read left out).
fn open_files() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64 - 1
}

#[test]
fn a_sim_out_of_files_answers_503_instead_of_leaving_clients_waiting() {
    if !std::path::Path::new("/proc/self/fd").is_dir() {
        eprintln!("skipped: needs /proc/self/fd (Linux)");
        return;
    }
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig::default()).unwrap();
    // A first connection, so that everything the sim opens on its first accept is open.
    let mut warm = std::net::TcpStream::connect(sim.addr).unwrap();
    warm.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut s = String::new();
    warm.read_to_string(&mut s).unwrap();
    assert!(s.starts_with("HTTP/1.1 200"), "{s}");
    drop(warm);
    std::thread::sleep(Duration::from_millis(300));
    // The clients' 3 sockets made first (not connected: the sim cannot accept them yet), then
    // every other descriptor taken (the limit lowered to what is open and 64 more, those filled
    // with /dev/null): connecting takes no descriptor, and the sim's accepts fail EMFILE.
    let sockets: Vec<std::os::fd::RawFd> = (0..3)
        // SAFETY: socket() takes no pointer; its descriptor is owned by a TcpStream below.
        .map(|_| unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) })
        .collect();
    assert!(sockets.iter().all(|&fd| fd >= 0));
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write only the structs passed.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) };
    let low = libc::rlimit {
        rlim_cur: open_files() + 64,
        rlim_max: old.rlim_max,
    };
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) }, 0);
    let fillers: Vec<std::fs::File> = std::iter::from_fn(|| std::fs::File::open("/dev/null").ok())
        .take(1000)
        .collect();
    assert!(fillers.len() < 1000, "{}", fillers.len());
    let std::net::SocketAddr::V4(v4) = sim.addr else {
        panic!("{}", sim.addr)
    };
    let t0 = Instant::now();
    let clients: Vec<std::net::TcpStream> = sockets
        .into_iter()
        .map(|fd| {
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `addr` lives across the call and its size is passed; `fd` is a socket
            // this test made and now hands to the TcpStream, which closes it.
            let rc = unsafe {
                libc::connect(
                    fd,
                    std::ptr::addr_of!(addr).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            };
            assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            let mut c = unsafe { <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd) };
            c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            c.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                .unwrap();
            c
        })
        .collect();
    // Read in place: a client closed after its answer would free a descriptor for the sim.
    let mut clients = clients;
    let answers: Vec<String> = clients
        .iter_mut()
        .map(|c| {
            let mut s = String::new();
            let _ = c.read_to_string(&mut s);
            s
        })
        .collect();
    let took = t0.elapsed();
    drop(clients);
    drop(fillers);
    // SAFETY: as above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
    // Every client is answered, those the sim cannot accept 503 naming the limit, after the
    // sim's SHED_AFTER; none waits for its read timeout.
    let shed = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 503 Service Unavailable\r\n"))
        .inspect(|a| assert!(a.contains(inferbench_sim::SHED_MESSAGE), "{a}"))
        .count();
    let served = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 200 OK\r\n"))
        .count();
    assert_eq!((shed, served), (3, 0), "{answers:?}");
    assert!(
        took >= inferbench_sim::AcceptBackoff::SHED_AFTER,
        "{took:?}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
    sim.shutdown();
}
