//! Issue 40 §4: `run_bench` on a virtual clock. With `BenchOptions::clock` =
//! [`ClockSource::Tokio`] under a paused runtime every time read of the run (pacing, the
//! `--duration` end, the client's stamps) is tokio's virtual time, and the in-process replay
//! server's pauses are too: send times and the duration end are exact, and a run of seconds
//! takes milliseconds. tokio's timers tick in whole milliseconds, so a sleep until an arrival
//! wakes at its deadline rounded up to the next millisecond: exactly that, every time.

mod common;

use common::{prepared, stream_case};
use std::time::Duration;

use inferbench_client::ClockSource;
use inferbench_core::{Phase, RequestRecord};
use inferbench_loadgen::arrivals::{Arrivals, Schedule};
use inferbench_loadgen::{run_bench, BenchOptions, BenchOutcome, CancellationToken, ProgressMode};
use inferbench_testutil::replay::spawn_replay;

const MS: u64 = 1_000_000;

/// A virtual-clock run against a fresh replay server, no warmup.
async fn run(o: BenchOptions) -> BenchOutcome {
    let addr = spawn_replay(stream_case(2)).await.unwrap();
    let o = BenchOptions {
        base_url: format!("http://{addr}"),
        model: "replay-model".into(),
        progress: ProgressMode::Off,
        prepared: Some(prepared(8, 2, 4)),
        server_metrics: false,
        num_warmups: Some(0),
        rx_timestamps: false,
        clock: ClockSource::Tokio,
        ..o
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    out
}

fn profile(out: &BenchOutcome) -> Vec<&RequestRecord> {
    let mut p: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    p.sort_by_key(|r| r.request_id);
    p
}

/// Asserts that the profile was sent exactly on `schedule` (offsets from the profile start):
/// each request scheduled at its offset, released and sent at that deadline rounded up to
/// tokio's 1 ms tick, and finished 40 ms later.
fn assert_sent_on(prof: &[&RequestRecord], schedule: &[u64]) {
    assert_eq!(prof.len(), schedule.len());
    let start = prof[0].scheduled_ns;
    for (r, at) in prof.iter().zip(schedule) {
        let due = start + at;
        let wake = due.div_ceil(MS) * MS;
        assert_eq!(r.scheduled_ns, due, "request {}", r.request_id);
        assert_eq!(r.released_ns, Some(wake), "request {}", r.request_id);
        assert_eq!(r.sent_ns, wake, "request {}", r.request_id);
        assert_eq!(r.end_ns, wake + 40 * MS, "request {}", r.request_id);
        assert!(r.success, "{r:#?}");
    }
}

/// Poisson arrivals (burstiness 1) with a seed: the seeded schedule, sent exactly on time.
#[tokio::test(start_paused = true)]
async fn poisson_pacing_sends_exactly_on_the_seeded_schedule() {
    let kind = Arrivals::Gamma {
        rate_rps: 20.0,
        burstiness: 1.0,
    };
    let schedule: Vec<u64> = Schedule::with_count(kind, 7, 12).take(12).collect();
    // The seeded draw itself, pinned: 12 arrivals rescaled so the last is at 11 / 20 s.
    assert_eq!(schedule[0], 0);
    assert_eq!(schedule[11], 550_000_000);
    assert_eq!(&schedule[1..4], &POISSON_SEED7_HEAD);
    let out = run(BenchOptions {
        request_rate: Some(20.0),
        burstiness: 1.0,
        num_prompts: Some(12),
        seed: 7,
        ..Default::default()
    })
    .await;
    assert_sent_on(&profile(&out), &schedule);
}

/// The second to fourth offsets (ns) of the seed-7, 20 req/s, 12-arrival Poisson schedule.
const POISSON_SEED7_HEAD: [u64; 3] = [11_059_309, 59_984_758, 125_719_399];

/// Gamma arrivals (burstiness 0.25: bursty) with a seed: the seeded schedule, sent exactly on
/// time.
#[tokio::test(start_paused = true)]
async fn gamma_pacing_sends_exactly_on_the_seeded_schedule() {
    let kind = Arrivals::Gamma {
        rate_rps: 10.0,
        burstiness: 0.25,
    };
    let schedule: Vec<u64> = Schedule::with_count(kind, 3, 10).take(10).collect();
    assert_eq!(schedule[9], 900_000_000);
    assert_eq!(&schedule[1..4], &GAMMA_SEED3_HEAD);
    let out = run(BenchOptions {
        request_rate: Some(10.0),
        burstiness: 0.25,
        num_prompts: Some(10),
        seed: 3,
        ..Default::default()
    })
    .await;
    assert_sent_on(&profile(&out), &schedule);
}

/// The second to fourth offsets (ns) of the seed-3, 10 req/s, burstiness-0.25, 10-arrival
/// gamma schedule.
const GAMMA_SEED3_HEAD: [u64; 3] = [3_795, 374_428_697, 386_452_296];

/// `--duration` with paced arrivals: every arrival before the deadline is sent, none at or
/// after it, and the requests in flight at the deadline finish (none is cut off).
#[tokio::test(start_paused = true)]
async fn paced_duration_stops_issuing_exactly_at_the_deadline() {
    let kind = Arrivals::Gamma {
        rate_rps: 20.0,
        burstiness: 1.0,
    };
    let deadline = 1_000 * MS;
    let before: Vec<u64> = Schedule::new(kind, 11)
        .take_while(|&at| at < deadline)
        .collect();
    let out = run(BenchOptions {
        request_rate: Some(20.0),
        duration: Some(Duration::from_secs(1)),
        seed: 11,
        ..Default::default()
    })
    .await;
    let prof = profile(&out);
    assert_sent_on(&prof, &before);
    let last = prof.last().unwrap();
    assert_eq!(out.summary.num_prompts, before.len() as u64);
    assert_eq!(out.summary.completed, before.len() as u64);
    // The first arrival not sent is at or after the deadline.
    let next = Schedule::new(kind, 11).nth(before.len()).unwrap();
    assert!(next >= deadline, "{next}");
    assert!(last.sent_ns < prof[0].scheduled_ns + deadline);
    assert_eq!(LAST_PACED_END, last.end_ns - prof[0].scheduled_ns);
}

/// When the last request of the paced duration run ended, ns after the profile start: sent at
/// 963 ms, before the 1 s deadline, and finished 40 ms later, after it.
const LAST_PACED_END: u64 = 1_003 * MS;

/// `--duration` with a closed loop: 2 workers, 40 ms requests, 400 ms → each worker sends at
/// 0, 40, …, 360 ms and checks the deadline at 400 ms: exactly 20 requests, all finished.
#[tokio::test(start_paused = true)]
async fn closed_loop_duration_stops_at_exactly_the_deadline() {
    let out = run(BenchOptions {
        max_concurrency: Some(2),
        duration: Some(Duration::from_millis(400)),
        ..Default::default()
    })
    .await;
    let prof = profile(&out);
    assert_eq!(prof.len(), 20);
    assert!(prof.iter().all(|r| r.success));
    let start = prof.iter().map(|r| r.sent_ns).min().unwrap();
    let mut sends: Vec<u64> = prof.iter().map(|r| r.sent_ns - start).collect();
    sends.sort_unstable();
    let expected: Vec<u64> = (0..10).flat_map(|k| [k * 40 * MS, k * 40 * MS]).collect();
    assert_eq!(sends, expected);
    assert_eq!(
        prof.iter().map(|r| r.end_ns - start).max(),
        Some(400 * MS),
        "the last two end at the deadline, finished"
    );
    assert_eq!(out.summary.num_prompts, 20);
}
