//! NVML power sampling (the `nvml-wrapper` crate: NVIDIA's management library, loaded at run
//! time, so a machine without the driver only loses this sampler). A thread reads every GPU
//! each interval and writes the rows in nvidia-smi's `--format=csv` layout (same header, same
//! units, local timestamps `YYYY/MM/DD HH:MM:SS.fff`), so `power.csv` reads the same whichever
//! sampler wrote it, InferenceX's `aggregate_power.py` included. Where the GPUs have the
//! total-energy counter (Volta and newer, millijoules since the driver loaded), it is
//! snapshotted at the start and the end of the stream ([`crate::energy`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;

/// nvidia-smi's CSV header for the query the other sampler runs.
pub const HEADER: &str = "timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%], memory.used [MiB]";

/// Opens NVML and checks it lists at least one GPU. Errors: the library is missing or fails to
/// initialise, or there is no GPU.
pub fn open() -> Result<Nvml, String> {
    let nvml = Nvml::init().map_err(|e| format!("NVML: {e}"))?;
    match nvml.device_count() {
        Ok(n) if n > 0 => Ok(nvml),
        Ok(_) => Err("NVML: no GPU".into()),
        Err(e) => Err(format!("NVML: {e}")),
    }
}

/// One CSV row per GPU for the current moment (a cell NVML cannot read is `[N/A]`, as
/// nvidia-smi writes it).
fn rows(nvml: &Nvml) -> String {
    let now = chrono::Local::now().format("%Y/%m/%d %H:%M:%S%.3f");
    let n = nvml.device_count().unwrap_or(0);
    let mut out = String::new();
    for i in 0..n {
        let Ok(d) = nvml.device_by_index(i) else {
            continue;
        };
        let na = || "[N/A]".to_string();
        let power = d
            .power_usage()
            .map(|mw| format!("{:.2} W", f64::from(mw) / 1000.0))
            .unwrap_or_else(|_| na());
        let temp = d
            .temperature(TemperatureSensor::Gpu)
            .map(|t| t.to_string())
            .unwrap_or_else(|_| na());
        let sm = d
            .clock_info(Clock::SM)
            .map(|c| format!("{c} MHz"))
            .unwrap_or_else(|_| na());
        let mem = d
            .clock_info(Clock::Memory)
            .map(|c| format!("{c} MHz"))
            .unwrap_or_else(|_| na());
        let (ug, um) = d
            .utilization_rates()
            .map(|u| (format!("{} %", u.gpu), format!("{} %", u.memory)))
            .unwrap_or_else(|_| (na(), na()));
        let used = d
            .memory_info()
            .map(|m| format!("{} MiB", m.used / (1024 * 1024)))
            .unwrap_or_else(|_| na());
        out.push_str(&format!(
            "{now}, {i}, {power}, {temp}, {sm}, {mem}, {ug}, {um}, {used}\n"
        ));
    }
    out
}

/// Every GPU's energy counter in joules, or `None` when any GPU lacks it.
pub fn energy(nvml: &Nvml) -> Option<Vec<(String, f64)>> {
    let n = nvml.device_count().ok()?;
    (0..n)
        .map(|i| {
            let mj = nvml
                .device_by_index(i)
                .ok()?
                .total_energy_consumption()
                .ok()?;
            Some((i.to_string(), mj as f64 / 1000.0))
        })
        .collect()
}

/// A running NVML sampling thread.
pub struct NvmlLoop {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
}

impl NvmlLoop {
    /// Writes the header and a first sample to `path`, the start energy snapshot when the GPUs
    /// have the counter, and samples every `interval` until stopped.
    ///
    /// Errors: NVML cannot be opened, or the file cannot be written.
    pub fn start(path: &Path, interval: Duration) -> Result<NvmlLoop, String> {
        let nvml = open()?;
        let mut f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(e) = energy(&nvml) {
            let _ = crate::energy::write_snapshot(&crate::energy::snapshot_paths(path).0, &e);
        }
        writeln!(f, "{HEADER}")
            .and_then(|_| f.write_all(rows(&nvml).as_bytes()))
            .and_then(|_| f.flush())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let tick = Duration::from_millis(10);
            let mut next = std::time::Instant::now() + interval;
            while !s2.load(Ordering::Relaxed) {
                if std::time::Instant::now() >= next {
                    let _ = f.write_all(rows(&nvml).as_bytes());
                    let _ = f.flush();
                    next += interval;
                }
                std::thread::sleep(tick.min(interval));
            }
            // One more sample and the end snapshot, so the stream brackets the window's end.
            let _ = f.write_all(rows(&nvml).as_bytes());
            let _ = f.flush();
        });
        Ok(NvmlLoop {
            stop,
            thread: Some(thread),
            path: path.to_path_buf(),
        })
    }

    /// Stops the thread after its last sample and writes the end energy snapshot.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            if let Ok(nvml) = open() {
                if let Some(e) = energy(&nvml) {
                    let end = crate::energy::snapshot_paths(&self.path).1;
                    let _ = crate::energy::write_snapshot(&end, &e);
                }
            }
        }
    }
}

impl Drop for NvmlLoop {
    fn drop(&mut self) {
        self.stop();
    }
}
