//! The per-second Prometheus `/metrics` scraper of a point (issue 10): a baseline scrape before
//! the warmup, one every `interval` while the point runs, and a final one after the profile.
//! The snapshots go to `server_metrics.jsonl` (one JSON object per line: `phase`, `unix_s`,
//! `samples`) and [`inferbench_core::server_metrics::summarize`] turns them into the point's
//! server-side figures. A server without `/metrics` yields no scraper: noted, never an error.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use inferbench_client::{http_get_via, Reach};
use inferbench_core::prometheus::parse_prometheus;
use inferbench_core::server_metrics::Snapshot;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Scrape timeout: a scrape slower than this is skipped (the next tick tries again).
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);

/// A running scraper; [`Scraper::finish`] stops it and returns every snapshot in time order.
pub struct Scraper {
    url: String,
    reach: Reach,
    phase: Arc<Mutex<String>>,
    snaps: Arc<Mutex<Vec<Snapshot>>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One scrape of `url`; `None` when it does not answer 200 within [`SCRAPE_TIMEOUT`]. Parsing
/// runs on the blocking pool so a large exposition never delays the load generator's I/O
/// threads.
async fn scrape(url: &str, phase: &str, reach: &Reach) -> Option<Snapshot> {
    let Ok((200, body)) = http_get_via(url, SCRAPE_TIMEOUT, reach).await else {
        return None;
    };
    let unix_s = unix_now();
    let samples =
        tokio::task::spawn_blocking(move || parse_prometheus(&String::from_utf8_lossy(&body)))
            .await
            .ok()?;
    Some(Snapshot {
        phase: phase.to_string(),
        unix_s,
        samples,
    })
}

impl Scraper {
    /// Takes the baseline scrape of `<base_url>/metrics` and starts scraping every `interval`
    /// in phase `warmup`; `None` when the baseline gets no answer or no sample (no
    /// `/metrics`). Every scrape reaches the server as `reach` says (an `https://` server over
    /// TLS, through the measured requests' proxy).
    pub async fn start(base_url: &str, interval: Duration, reach: &Reach) -> Option<Scraper> {
        let url = format!("{}/metrics", base_url.trim_end_matches('/'));
        // A 200 that holds no Prometheus sample is no /metrics either.
        let first = scrape(&url, "baseline", reach)
            .await
            .filter(|s| !s.samples.is_empty())?;
        let phase = Arc::new(Mutex::new("warmup".to_string()));
        let snaps = Arc::new(Mutex::new(vec![first]));
        let (stop, mut stopped) = watch::channel(false);
        let task = {
            let (url, phase, snaps, reach) =
                (url.clone(), phase.clone(), snaps.clone(), reach.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(interval.max(Duration::from_millis(50)));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.tick().await;
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = stopped.changed() => break,
                    }
                    let p = phase.lock().map(|p| p.clone()).unwrap_or_default();
                    if let Some(s) = scrape(&url, &p, &reach).await {
                        if let Ok(mut v) = snaps.lock() {
                            v.push(s);
                        }
                    }
                }
            })
        };
        Some(Scraper {
            url,
            reach: reach.clone(),
            phase,
            snaps,
            stop,
            task,
        })
    }

    /// Starts phase `phase` (`profile` when the measured phase starts): one scrape now, so
    /// the phase's counters start from a value read at its start, then the periodic scrapes
    /// carry its label.
    pub async fn mark(&self, phase: &str) {
        if let Ok(mut p) = self.phase.lock() {
            *p = phase.to_string();
        }
        if let Some(s) = scrape(&self.url, phase, &self.reach).await {
            if let Ok(mut v) = self.snaps.lock() {
                v.push(s);
                // A periodic scrape may have landed in between: keep time order.
                v.sort_by(|a, b| a.unix_s.total_cmp(&b.unix_s));
            }
        }
    }

    /// Stops the periodic scrapes, takes the final one, and returns all snapshots.
    pub async fn finish(self) -> Vec<Snapshot> {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        let last = scrape(&self.url, "final", &self.reach).await;
        let mut v = self.snaps.lock().map(|v| v.clone()).unwrap_or_default();
        v.extend(last);
        v.sort_by(|a, b| a.unix_s.total_cmp(&b.unix_s));
        v
    }
}

/// Writes snapshots as `server_metrics.jsonl` lines (what the store ingests).
pub fn write_jsonl(path: &Path, snaps: &[Snapshot]) -> std::io::Result<()> {
    // Never written into a device, FIFO or socket, nor a directory (issue 39 §1).
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for s in snaps {
        serde_json::to_writer(&mut f, s)?;
        f.write_all(b"\n")?;
    }
    f.into_inner().map_err(|e| e.into_error())?.sync_data()
}
