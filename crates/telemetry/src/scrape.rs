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

/// What [`write_jsonl_within`] wrote: the snapshots kept of those given, and the file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Snapshots written.
    pub kept: usize,
    /// Snapshots given.
    pub of: usize,
    /// Bytes of the file.
    pub bytes: u64,
}

/// The snapshots of `lines` (each one JSONL line's bytes, newline included) to write within
/// `max_bytes`: all when they fit; else the first and the last (the baseline and the final
/// scrape) and every `k`-th one between them for the smallest `k` that fits (the interval
/// evenly widened); only the first and last when no `k` fits; none when those two alone do
/// not. Indices in order.
pub fn thin_to_fit(lines: &[u64], max_bytes: u64) -> Vec<usize> {
    let n = lines.len();
    let total: u64 = lines.iter().sum();
    if total <= max_bytes || n == 0 {
        return (0..n).collect();
    }
    let ends = |k: usize| -> Vec<usize> {
        let mut v = vec![0];
        v.extend((k..n.saturating_sub(1)).step_by(k.max(1)));
        if n > 1 {
            v.push(n - 1);
        }
        v
    };
    let bytes = |v: &[usize]| -> u64 { v.iter().map(|&i| lines[i]).sum() };
    // The smallest stride that fits (bytes shrink as the stride grows, up to n).
    let (mut lo, mut hi) = (2usize, n.max(2));
    if bytes(&ends(hi)) > max_bytes {
        let two = ends(n);
        return if bytes(&two) <= max_bytes {
            two
        } else {
            Vec::new()
        };
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if bytes(&ends(mid)) <= max_bytes {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    ends(lo)
}

/// Writes snapshots as `server_metrics.jsonl` lines within `max_bytes` (`None`: all of them,
/// as [`write_jsonl`]): when all do not fit, they are thinned evenly ([`thin_to_fit`]: the
/// baseline and the final scrape kept, the interval widened), so the file never passes the
/// file-size limit the caller derives `max_bytes` from (issue 39's leftovers, 2: a long point's
/// scrapes hit `ulimit -f` midway, their number not being known up front). Nothing is written
/// when not even the first and last fit.
///
/// # Errors
/// Serializing or writing the file (a path that is not a regular file is refused).
pub fn write_jsonl_within(
    path: &Path,
    snaps: &[Snapshot],
    max_bytes: Option<u64>,
) -> std::io::Result<Written> {
    let Some(most) = max_bytes else {
        write_jsonl(path, snaps)?;
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        return Ok(Written {
            kept: snaps.len(),
            of: snaps.len(),
            bytes,
        });
    };
    let mut sizes = Vec::with_capacity(snaps.len());
    for s in snaps {
        let mut counter = ByteCounter(0);
        serde_json::to_writer(&mut counter, s)?;
        sizes.push(counter.0 + 1);
    }
    let keep = thin_to_fit(&sizes, most);
    let bytes = keep.iter().map(|&i| sizes[i]).sum();
    if keep.is_empty() {
        return Ok(Written {
            kept: 0,
            of: snaps.len(),
            bytes: 0,
        });
    }
    let kept: Vec<Snapshot> = keep.iter().map(|&i| snaps[i].clone()).collect();
    write_jsonl(path, &kept)?;
    Ok(Written {
        kept: kept.len(),
        of: snaps.len(),
        bytes,
    })
}

/// Counts the bytes written to it.
struct ByteCounter(u64);

impl Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39's leftovers, 2: the scrapes are thinned evenly to fit, the first and last
    /// always kept, and never past the bytes given.
    #[test]
    fn scrapes_are_thinned_evenly_to_fit() {
        let ten = [10u64; 10];
        assert_eq!(thin_to_fit(&ten, 100), (0..10).collect::<Vec<_>>());
        // 9 lines fit 90 bytes: every 2nd between the first and the last.
        assert_eq!(thin_to_fit(&ten, 90), vec![0, 2, 4, 6, 8, 9]);
        assert_eq!(thin_to_fit(&ten, 40), vec![0, 3, 6, 9]);
        assert_eq!(thin_to_fit(&ten, 25), vec![0, 9]);
        assert_eq!(thin_to_fit(&ten, 19), Vec::<usize>::new());
        assert_eq!(thin_to_fit(&[], 0), Vec::<usize>::new());
        assert_eq!(thin_to_fit(&[5], 4), Vec::<usize>::new());
        assert_eq!(thin_to_fit(&[5], 5), vec![0]);
        for most in 0..120 {
            let lines = [7u64, 30, 2, 9, 14, 1, 8, 22, 3, 5];
            let kept = thin_to_fit(&lines, most);
            assert!(
                kept.iter().map(|&i| lines[i]).sum::<u64>() <= most,
                "{most}"
            );
        }
    }

    #[test]
    fn a_file_within_its_bytes_holds_the_kept_scrapes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let snap = |i: usize| Snapshot {
            phase: if i == 0 { "baseline" } else { "profile" }.to_string(),
            unix_s: i as f64,
            samples: Vec::new(),
        };
        let snaps: Vec<Snapshot> = (0..100).map(snap).collect();
        let all = write_jsonl_within(&p, &snaps, None).unwrap();
        assert_eq!((all.kept, all.of), (100, 100));
        let most = all.bytes / 3;
        let w = write_jsonl_within(&p, &snaps, Some(most)).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.len() as u64, w.bytes);
        assert!(w.bytes <= most && w.kept < 100 && w.kept > 2, "{w:?}");
        assert_eq!(text.lines().count(), w.kept);
        assert!(
            text.starts_with("{\"phase\":\"baseline\",\"unix_s\":0.0"),
            "{text}"
        );
        assert!(
            text.trim_end().ends_with("\"unix_s\":99.0,\"samples\":[]}"),
            "{text}"
        );
    }
}
