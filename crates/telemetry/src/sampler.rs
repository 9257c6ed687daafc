//! GPU power samplers writing `power.csv` (reference/inferencex-producer.md §5.4). NVML
//! ([`crate::nvml`]) samples in a thread of ours; the vendor tools run in their own loop mode
//! for the whole point, their CSV goes to the file as it comes, and on stop the tool is killed,
//! a cut-off last line dropped, and one more one-shot sample appended so the stream brackets
//! the window's end. `auto` takes the first that answers: NVML, then `nvidia-smi`, then
//! `amd-smi`; none found means no power for the run (said, not an error). Energy counters are
//! snapshotted beside the stream where there is one: NVML's total energy, `amd-smi metric -E`
//! ([`crate::energy`]).
//!
//! Columns (nvidia-smi): `timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm
//! [MHz], clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%],
//! memory.used [MiB]`, timestamps in local time, one row per GPU per tick. amd-smi: its `metric
//! -p -c -t -u --csv` columns, preamble lines and repeated headers filtered out.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which sampler to use (`--power`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PowerMode {
    /// The first available of NVML, nvidia-smi, amd-smi; none is fine.
    #[default]
    Auto,
    /// No power sampling.
    Off,
    /// NVML only (an error when the library or a GPU is missing).
    Nvml,
    /// nvidia-smi only (an error when it is missing).
    NvidiaSmi,
    /// amd-smi only (an error when it is missing).
    AmdSmi,
}

impl PowerMode {
    /// Parses `auto`, `off`, `nvml`, `nvidia-smi`, `amd-smi`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "auto" => PowerMode::Auto,
            "off" => PowerMode::Off,
            "nvml" => PowerMode::Nvml,
            "nvidia-smi" => PowerMode::NvidiaSmi,
            "amd-smi" => PowerMode::AmdSmi,
            _ => return None,
        })
    }

    /// The flag's value as typed (`nvidia-smi`): what [`PowerMode::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            PowerMode::Auto => "auto",
            PowerMode::Off => "off",
            PowerMode::Nvml => "nvml",
            PowerMode::NvidiaSmi => "nvidia-smi",
            PowerMode::AmdSmi => "amd-smi",
        }
    }
}

/// `--power`'s values with their `--help` lines (the `clap` feature).
#[cfg(feature = "clap")]
impl clap::ValueEnum for PowerMode {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            PowerMode::Auto,
            PowerMode::Off,
            PowerMode::Nvml,
            PowerMode::NvidiaSmi,
            PowerMode::AmdSmi,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            PowerMode::Auto => "NVML, else nvidia-smi, else amd-smi, else none",
            PowerMode::Off => "No power sampling",
            PowerMode::Nvml => "NVML only",
            PowerMode::NvidiaSmi => "nvidia-smi only",
            PowerMode::AmdSmi => "amd-smi only",
        };
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

/// The tool a sampler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerSource {
    /// NVML through `nvml-wrapper`, in a thread of ours.
    Nvml,
    /// `nvidia-smi --query-gpu … --format=csv --loop-ms=N`.
    NvidiaSmi,
    /// `amd-smi metric … --csv -w N`.
    AmdSmi,
}

impl PowerSource {
    /// `nvidia-smi` / `amd-smi`.
    pub fn name(self) -> &'static str {
        match self {
            PowerSource::Nvml => "nvml",
            PowerSource::NvidiaSmi => "nvidia-smi",
            PowerSource::AmdSmi => "amd-smi",
        }
    }
}

const NVIDIA_QUERY: &str = "timestamp,index,power.draw,temperature.gpu,clocks.current.sm,\
clocks.current.memory,utilization.gpu,utilization.memory,memory.used";

/// How long a one-shot vendor-tool call may take before it is killed (a hung driver must not
/// hang the benchmark: trial of issue 10).
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `tool args…` and returns its stdout when it exits 0 within [`TOOL_TIMEOUT`]; a tool
/// that is missing, fails or hangs gives `None` (a hung one is killed).
fn output_within(tool: &str, args: &[&str]) -> Option<Vec<u8>> {
    let mut child = Command::new(tool)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Read stdout on a thread so a chatty tool cannot block on a full pipe.
    let mut out = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut v);
        let _ = tx.send(v);
    });
    let t0 = Instant::now();
    let ok = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st.success(),
            Ok(None) if t0.elapsed() < TOOL_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
        }
    };
    // A killed tool's children may hold the pipe open: never wait on the reader then, and
    // not long after a clean exit either.
    if !ok {
        return None;
    }
    rx.recv_timeout(TOOL_TIMEOUT).ok()
}

/// Whether `tool probe…` runs and exits 0 with some output within [`TOOL_TIMEOUT`].
fn answers(tool: &str, probe: &[&str]) -> bool {
    output_within(tool, probe).is_some_and(|o| !String::from_utf8_lossy(&o).trim().is_empty())
}

/// A running sampler; [`PowerSampler::stop`] ends it.
pub struct PowerSampler {
    source: PowerSource,
    path: PathBuf,
    /// The vendor tool (nvidia-smi, amd-smi); `None` for NVML.
    child: Option<Child>,
    pump: Option<std::thread::JoinHandle<()>>,
    nvml: Option<crate::nvml::NvmlLoop>,
}

/// `amd-smi metric -E --csv` into `path` (its CSV lines only): the energy accumulators.
fn amd_energy_snapshot(path: &Path) {
    if let Some(o) = output_within("amd-smi", &["metric", "-E", "--csv"]) {
        let text = String::from_utf8_lossy(&o);
        let csv: String = text
            .lines()
            .filter(|l| l.contains(','))
            .map(|l| format!("{}\n", l.trim()))
            .collect();
        if !csv.is_empty() {
            let _ = std::fs::write(path, csv);
        }
    }
}

impl PowerSampler {
    /// Starts sampling every `interval` into `path` and waits (up to 3 intervals + 5 s) until
    /// the first sample is in the file, so the stream begins before the caller's window.
    /// `Ok(None)`: `auto` found no tool, or `off`. Errors: a tool asked for by name is missing
    /// or does not start, or the file cannot be written.
    pub fn start(
        mode: PowerMode,
        interval: Duration,
        path: &Path,
    ) -> Result<Option<PowerSampler>, String> {
        let nvidia = || answers("nvidia-smi", &["-L"]);
        let amd = || answers("amd-smi", &["list"]);
        let nvml = || crate::nvml::open().is_ok();
        let source = match mode {
            PowerMode::Off => return Ok(None),
            PowerMode::Nvml => {
                crate::nvml::open().map_err(|e| format!("--power nvml: {e}"))?;
                PowerSource::Nvml
            }
            PowerMode::NvidiaSmi if nvidia() => PowerSource::NvidiaSmi,
            PowerMode::AmdSmi if amd() => PowerSource::AmdSmi,
            PowerMode::NvidiaSmi | PowerMode::AmdSmi => {
                return Err(format!(
                    "--power {}: the tool is not on PATH or lists no GPU",
                    if mode == PowerMode::NvidiaSmi {
                        "nvidia-smi"
                    } else {
                        "amd-smi"
                    }
                ))
            }
            PowerMode::Auto if nvml() => PowerSource::Nvml,
            PowerMode::Auto if nvidia() => PowerSource::NvidiaSmi,
            PowerMode::Auto if amd() => PowerSource::AmdSmi,
            PowerMode::Auto => return Ok(None),
        };
        let ms = interval.as_millis().clamp(50, 3_600_000);
        if source == PowerSource::Nvml {
            let l = crate::nvml::NvmlLoop::start(path, Duration::from_millis(ms as u64))?;
            return Ok(Some(PowerSampler {
                source,
                path: path.to_path_buf(),
                child: None,
                pump: None,
                nvml: Some(l),
            }));
        }
        let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (child, pump) = match source {
            PowerSource::Nvml => unreachable!("started above"),
            PowerSource::NvidiaSmi => {
                let child = Command::new("nvidia-smi")
                    .arg(format!("--query-gpu={NVIDIA_QUERY}"))
                    .arg("--format=csv")
                    .arg(format!("--loop-ms={ms}"))
                    .stdout(file)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("nvidia-smi: {e}"))?;
                (child, None)
            }
            PowerSource::AmdSmi => {
                amd_energy_snapshot(&crate::energy::snapshot_paths(path).0);
                let secs = (ms as f64 / 1000.0).ceil().max(1.0) as u64;
                let mut child = Command::new("amd-smi")
                    .args(["metric", "-p", "-c", "-t", "-u", "--csv", "-w"])
                    .arg(secs.to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("amd-smi: {e}"))?;
                let out = child.stdout.take().ok_or("amd-smi: no stdout")?;
                let pump = std::thread::spawn(move || amd_pump(out, file));
                (child, Some(pump))
            }
        };
        let sampler = PowerSampler {
            source,
            path: path.to_path_buf(),
            child: Some(child),
            pump,
            nvml: None,
        };
        let deadline = Instant::now() + interval * 3 + Duration::from_secs(5);
        while data_rows(&sampler.path) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Some(sampler))
    }

    /// The tool in use.
    pub fn source(&self) -> PowerSource {
        self.source
    }

    /// Stops the tool, drops a cut-off last line, appends one one-shot sample (nvidia-smi) or
    /// waits one more tick (amd-smi) so the stream extends past the window, and returns the
    /// file's path.
    pub fn stop(mut self, interval: Duration) -> PathBuf {
        if self.source == PowerSource::AmdSmi {
            std::thread::sleep(interval + Duration::from_millis(200));
        }
        self.end_tool();
        drop_partial_last_line(&self.path);
        if self.source == PowerSource::AmdSmi {
            amd_energy_snapshot(&crate::energy::snapshot_paths(&self.path).1);
        }
        if self.source == PowerSource::NvidiaSmi {
            let query = format!("--query-gpu={NVIDIA_QUERY}");
            if let Some(o) = output_within("nvidia-smi", &[&query, "--format=csv,noheader"]) {
                if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&self.path) {
                    let _ = f.write_all(&o);
                }
            }
        }
        self.path.clone()
    }
}

impl PowerSampler {
    /// Kills the sampling tool and waits for it (and the amd-smi pump); idempotent.
    fn end_tool(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(p) = self.pump.take() {
            let _ = p.join();
        }
        if let Some(mut l) = self.nvml.take() {
            l.stop();
        }
    }
}

/// A sampler dropped without [`PowerSampler::stop`] (the run failed in between) still ends
/// its tool: no nvidia-smi / amd-smi loop outlives the point.
impl Drop for PowerSampler {
    fn drop(&mut self) {
        self.end_tool();
    }
}

/// Copies amd-smi's CSV to `file`, keeping the first header and the data rows: preamble lines
/// (no comma) and repeated headers are dropped.
fn amd_pump(out: std::process::ChildStdout, file: std::fs::File) {
    let mut w = std::io::BufWriter::new(file);
    let mut header: Option<String> = None;
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        let t = line.trim();
        if !t.contains(',') {
            continue;
        }
        let is_header = t.to_lowercase().contains("gpu")
            && t.to_lowercase().contains("power")
            && !t.chars().next().is_some_and(|c| c.is_ascii_digit());
        match (&header, is_header) {
            (None, true) => header = Some(t.to_string()),
            (Some(_), true) | (None, false) => continue,
            (Some(_), false) => {}
        }
        let _ = writeln!(w, "{t}");
        let _ = w.flush();
    }
}

/// Lines after the header that end with a newline.
fn data_rows(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.matches('\n').count().saturating_sub(1))
        .unwrap_or(0)
}

fn drop_partial_last_line(path: &Path) {
    if let Ok(s) = std::fs::read_to_string(path) {
        if !s.is_empty() && !s.ends_with('\n') {
            let keep = s.rfind('\n').map_or(0, |i| i + 1);
            let _ = std::fs::write(path, &s[..keep]);
        }
    }
}

#[cfg(test)]
mod power_mode_tests {
    use super::PowerMode;

    /// Every mode's name parses back to it.
    #[test]
    fn names_parse_back() {
        for m in [
            PowerMode::Auto,
            PowerMode::Off,
            PowerMode::Nvml,
            PowerMode::NvidiaSmi,
            PowerMode::AmdSmi,
        ] {
            assert_eq!(PowerMode::parse(m.name()), Some(m));
        }
    }
}
