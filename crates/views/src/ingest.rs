//! What `inferbench ingest` (and `bench --db`) prints of an ingest: the store's
//! [`IngestReport`] as prose (moved from the store, which renders nothing: issue 40 §5).
//! [`IngestText`] gives the report its `render` and `render_skipped` methods; bring it into
//! scope with `use inferbench_views::ingest::IngestText;`.

use inferbench_store::IngestReport;

/// The prose of an [`IngestReport`]: its summary lines and its skipped units.
pub trait IngestText {
    /// The units that could not be ingested, one `error: skipped PATH: REASON` line each
    /// (`error: skipped REASON` when the reason starts with the path); empty when nothing was
    /// skipped.
    fn render_skipped(&self) -> String;

    /// A human-readable multi-line summary (what `inferbench ingest` prints on stdout; the
    /// skipped units apart, [`IngestText::render_skipped`]).
    fn render(&self) -> String;
}

impl IngestText for IngestReport {
    /// The units that could not be ingested, one `error: skipped PATH: REASON` line each
    /// (`error: skipped REASON` when the reason starts with the path: `P:2:0: …`) (what
    /// `inferbench ingest` prints on stderr: they make it exit 1; trial 16 found them on stdout
    /// without a prefix). Empty when nothing was skipped.
    fn render_skipped(&self) -> String {
        (self.skipped.iter())
            .map(|k| {
                // A reason that starts with the path (`P:2:0: …`, `P/summary.json:3: …`) names
                // it already (trial 17: `error: skipped P: P:2:0: …`).
                let named = (k.reason.strip_prefix(&k.path))
                    .is_some_and(|rest| rest.starts_with([':', '/']));
                if named {
                    format!("error: skipped {}\n", k.reason)
                } else {
                    format!("error: skipped {}: {}\n", k.path, k.reason)
                }
            })
            .collect()
    }

    /// A human-readable multi-line summary (what `inferbench ingest` prints on stdout; the
    /// skipped units apart, [`IngestText::render_skipped`]).
    fn render(&self) -> String {
        // A records file found incomplete is said as such, never as "none were saved" beside
        // the warning that it was (issue 39, fresh tester).
        let incomplete = match self.incomplete_records_points {
            0 => String::new(),
            n => format!(
                "; {n} point(s) with an incomplete or broken records file, failed (see the \
                 warning{})",
                if n == 1 { "" } else { "s" }
            ),
        };
        let records = if self.requests == 0 && self.incomplete_records_points > 0 {
            format!("no request records{incomplete}")
        } else if self.requests == 0 && self.from_dump {
            "no request records (a dump has none)".to_string()
        } else if self.requests == 0 && self.points > 0 {
            "no request records (none were saved with the results; `inferbench bench` keeps \
             them with --save-requests FILE)"
                .to_string()
        } else {
            format!(
                "{} request record(s) (warmups included){incomplete}",
                self.requests
            )
        };
        // A "run" of the store is one source: a point directory, a result file, an eval
        // directory or a dump's workflow run. Say so, with the batches they make up (trial 10:
        // "5 run(s), 5 point(s)" for one sweep read as five sweeps).
        let evals = if self.evals > 0 {
            format!(", {} eval result(s)", self.evals)
        } else {
            String::new()
        };
        let tail = if self.evals > 0 && self.points == 0 {
            // Eval sets only: no points, so nothing to say about request records.
            String::new()
        } else {
            format!(", {records}")
        };
        let sources = if self.from_dump {
            "workflow run(s) of an InferenceX dump"
        } else {
            "source(s)"
        };
        let mut about = Vec::new();
        if !self.from_dump {
            about.push("result directories or files".to_string());
        }
        if self.runs_reingested > 0 {
            about.push(format!(
                "{} already present, updated in place",
                self.runs_reingested
            ));
        }
        let about = if about.is_empty() {
            String::new()
        } else {
            format!(" ({})", about.join("; "))
        };
        // Nothing found: the error alone, not a line of zeros above it (trial 11).
        let mut s = if self.found_nothing() {
            format!(
                "error: nothing to ingest in {} (no result files or artifact directories)\n",
                self.path
            )
        } else if self.stored_nothing() {
            let mut why = Vec::new();
            if !self.unfinished.is_empty() {
                why.push(format!(
                    "{} sweep point(s) not finished",
                    self.unfinished.len()
                ));
            }
            if !self.skipped.is_empty() {
                why.push(format!("{} unit(s) skipped", self.skipped.len()));
            }
            if !self.sweeps.is_empty() && self.unfinished.is_empty() && self.skipped.is_empty() {
                why.push("no point of the sweep finished yet".to_string());
            }
            format!(
                "error: nothing ingested from {} ({})\n",
                self.path,
                why.join(", ")
            )
        } else {
            format!(
                "ingested {} point(s){evals} from {} {sources}{about} in {} batch(es){tail}\n",
                self.points,
                self.runs_ingested,
                self.batches.len()
            )
        };
        // Which of them `report` leaves out by default (trial 18: "ingested 2 point(s)" for a
        // Ctrl-C'd sweep, one of them a failed point `report` lists only when asked).
        let mut left_out = Vec::new();
        if self.failed_points > 0 {
            let it = it_or_them(self.failed_points);
            let interrupted = match self.interrupted_points {
                0 => String::new(),
                n if n == self.failed_points => ": interrupted before any request finished".into(),
                n => format!(", {n} of them interrupted before any request finished"),
            };
            // Points that measured but were failed (an incomplete records file) are not
            // called "nothing measured" (issue 39, fresh tester's finding 3).
            let cause = match self.measured_failed_points {
                0 => format!("nothing measured{interrupted}"),
                m if m == self.failed_points => {
                    "measured, but failed: `report --columns conc,error` says why".to_string()
                }
                m => format!(
                    "nothing measured{interrupted}, or {m} of them measured but failed: `report \
                     --columns conc,error` says why"
                ),
            };
            left_out.push(format!(
                "{} failed ({cause}; `report --include-failed` lists {it})",
                self.failed_points
            ));
        }
        if self.invalid_points > 0 {
            let it = it_or_them(self.invalid_points);
            left_out.push(format!(
                "{} invalid (kept off frontiers; `report --include-invalid` lets {it} compete)",
                self.invalid_points
            ));
        }
        if !left_out.is_empty() && !self.stored_nothing() {
            s.push_str(&format!("of these points: {}\n", left_out.join(", ")));
        }
        if !self.kept.is_empty() {
            let list: Vec<String> = (self.kept.iter())
                .map(|(k, v)| format!("{}={v}", if k == "hardware" { "hw" } else { k }))
                .collect();
            s.push_str(&format!(
                "not given by the files, kept as stored before: {}\n",
                list.join(", ")
            ));
        }
        // Trial 13: a value the files do not give at all is missing, not an unknown name.
        let (missing, unknown): (Vec<_>, Vec<_>) =
            self.unknown.iter().partition(|(_, name)| name == "unknown");
        if !missing.is_empty() {
            // Named by their --set keys (trial 13: `hardware` listed beside `--set hw=`).
            let keys: Vec<&str> = (missing.iter())
                .map(|(k, _)| if k == "hardware" { "hw" } else { k.as_str() })
                .collect();
            let sets: Vec<String> = keys.iter().map(|k| format!("--set {k}=…")).collect();
            s.push_str(&format!(
                "not given by the files, stored as `unknown`: {} (name them with {})\n",
                keys.join(", "),
                sets.join(" ")
            ));
        }
        if !unknown.is_empty() {
            s.push_str(
                "names the store does not know, stored as they are (to store one under a name \
                 it knows, pass --set KEY=VALUE, e.g. --set hw=h100):\n",
            );
            for (kind, name) in unknown {
                s.push_str(&format!("  {kind}: {name}\n"));
            }
        }
        if !self.renamed.is_empty() {
            let list: Vec<String> = self
                .renamed
                .iter()
                .map(|(kind, raw, key)| format!("{kind} {raw} → {key}"))
                .collect();
            s.push_str(&format!(
                "stored under InferenceX's keys, so that runs from every source meet in one \
                 group (`report -f` accepts either name): {}\n",
                list.join(", ")
            ));
        }
        for u in &self.unfinished {
            s.push_str(&format!("not finished, nothing to ingest: {u}\n"));
        }
        for line in &self.sweeps {
            s.push_str(&format!("{line}\n"));
        }
        for w in &self.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
        if !self.ignored.is_empty() {
            s.push_str(&format!(
                "ignored {} non-result file(s)",
                self.ignored.len()
            ));
            let shown: Vec<&str> = self.ignored.iter().take(5).map(String::as_str).collect();
            s.push_str(&format!(": {}", shown.join(", ")));
            if self.ignored.len() > 5 {
                s.push_str(", …");
            }
            s.push('\n');
        }
        s
    }
}

/// "it" for one, "them" for several (trial 19: "lets it compete" of 3 points).
fn it_or_them(n: usize) -> &'static str {
    if n == 1 {
        "it"
    } else {
        "them"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferbench_store::Skipped;

    /// Trial 17: a reason that names the path already is not prefixed with it again.
    #[test]
    fn a_skipped_unit_names_its_path_once() {
        let skip = |path: &str, reason: &str| IngestReport {
            skipped: vec![Skipped {
                path: path.into(),
                reason: reason.into(),
            }],
            ..IngestReport::default()
        };
        for (path, reason, line) in [
            (
                "/r/a.json",
                "/r/a.json:2:0: expected value",
                "/r/a.json:2:0: expected value",
            ),
            (
                "/r/p",
                "/r/p/summary.json:3:1: bad",
                "/r/p/summary.json:3:1: bad",
            ),
            ("/r/p", "no summary.json", "/r/p: no summary.json"),
            // A sibling whose name merely starts like the path is not the path.
            ("/r/p", "/r/p2: gone", "/r/p: /r/p2: gone"),
        ] {
            assert_eq!(
                skip(path, reason).render_skipped(),
                format!("error: skipped {line}\n")
            );
        }
    }

    /// Trial 13: a value the files do not give (stored as `unknown`) is called missing, not an
    /// unknown name, and no developer advice is given.
    #[test]
    fn missing_values_and_unknown_names_read_apart() {
        let r = IngestReport {
            points: 1,
            runs_ingested: 1,
            unknown: [
                ("precision".to_string(), "unknown".to_string()),
                ("hardware".to_string(), "unknown".to_string()),
                ("model".to_string(), "golden-llama".to_string()),
            ]
            .into(),
            ..Default::default()
        };
        let text = r.render();
        assert!(
            text.contains(
                "not given by the files, stored as `unknown`: hw, precision (name them with \
                 --set hw=… --set precision=…)\n\
                 names the store does not know, stored as they are (to store one under a name \
                 it knows, pass --set KEY=VALUE, e.g. --set hw=h100):\n  model: golden-llama\n"
            ),
            "{text}"
        );
        assert!(!text.contains("normalize table"), "{text}");
    }

    /// Issue 39, fresh tester: a records file found incomplete is said as such, never as "none
    /// were saved" beside the warning that it was incomplete.
    #[test]
    fn ingest_report_says_an_incomplete_records_file_once() {
        let mut r = IngestReport {
            runs_ingested: 1,
            points: 1,
            failed_points: 1,
            measured_failed_points: 1,
            incomplete_records_points: 1,
            batches: ["results/bench".to_string()].into(),
            ..IngestReport::default()
        };
        let first = |r: &IngestReport| r.render().lines().next().unwrap().to_string();
        assert_eq!(
            first(&r),
            "ingested 1 point(s) from 1 source(s) (result directories or files) in 1 \
             batch(es), no request records; 1 point(s) with an incomplete or broken records \
             file, failed (see the warning)"
        );
        r.requests = 1898;
        assert_eq!(
            first(&r),
            "ingested 1 point(s) from 1 source(s) (result directories or files) in 1 \
             batch(es), 1898 request record(s) (warmups included); 1 point(s) with an \
             incomplete or broken records file, failed (see the warning)"
        );
    }

    /// A bench result without `--save-requests` has no records: the report says why, not "0".
    #[test]
    fn ingest_report_explains_missing_request_records() {
        let mut r = IngestReport {
            runs_ingested: 1,
            points: 1,
            batches: ["results/bench".to_string()].into(),
            ..IngestReport::default()
        };
        assert_eq!(
            r.render(),
            "ingested 1 point(s) from 1 source(s) (result directories or files) in 1 \
             batch(es), no request records (none were saved with the results; `inferbench \
             bench` keeps them with --save-requests FILE)\n"
        );
        r.requests = 12;
        assert_eq!(
            r.render(),
            "ingested 1 point(s) from 1 source(s) (result directories or files) in 1 \
             batch(es), 12 request record(s) (warmups included)\n"
        );
        // One sweep of five points ingested again (trial 10: it read as five runs).
        r.runs_ingested = 5;
        r.runs_reingested = 5;
        r.points = 5;
        r.evals = 1;
        assert_eq!(
            r.render(),
            "ingested 5 point(s), 1 eval result(s) from 5 source(s) (result directories or \
             files; 5 already present, updated in place) in 1 batch(es), 12 request record(s) \
             (warmups included)\n"
        );
        // Trial 18: the points `report` leaves out by default are counted.
        r.failed_points = 1;
        r.invalid_points = 2;
        assert!(r.render().ends_with(
            "\nof these points: 1 failed (nothing measured; `report --include-failed` lists \
             it), 2 invalid (kept off frontiers; `report --include-invalid` lets them compete)\n"
        ));
        // A point the sweep called interrupted is named so (trial 20: only "failed").
        r.interrupted_points = 1;
        assert!(r.render().contains(
            "of these points: 1 failed (nothing measured: interrupted before any request \
             finished; `report --include-failed` lists it)"
        ));
        r.failed_points = 3;
        assert!(r.render().contains(
            "3 failed (nothing measured, 1 of them interrupted before any request finished; \
             `report --include-failed` lists them)"
        ));
        r.failed_points = 1;
        r.interrupted_points = 0;
        let dump = IngestReport {
            from_dump: true,
            runs_ingested: 2,
            runs_reingested: 2,
            points: 4,
            batches: ["a".to_string(), "b".to_string()].into(),
            ..IngestReport::default()
        };
        assert_eq!(
            dump.render(),
            "ingested 4 point(s) from 2 workflow run(s) of an InferenceX dump (2 already \
             present, updated in place) in 2 batch(es), no request records (a dump has none)\n"
        );
    }

    /// Known names stored under another key are said, with both names (moved from the store's
    /// fixture ingest test, which checks the `renamed` set itself).
    #[test]
    fn renamed_names_are_said_with_both_names() {
        let r = IngestReport {
            runs_ingested: 1,
            points: 1,
            renamed: [
                (
                    "model".to_string(),
                    "gptoss".to_string(),
                    "gptoss120b".to_string(),
                ),
                (
                    "model".to_string(),
                    "dsr1-fp4".to_string(),
                    "dsr1".to_string(),
                ),
            ]
            .into(),
            ..IngestReport::default()
        };
        assert!(r.render().contains(
            "stored under InferenceX's keys, so that runs from every source meet in one group \
             (`report -f` accepts either name): model dsr1-fp4 → dsr1, model gptoss → gptoss120b\n"
        ));
    }

    /// Eval results without points: no word of request records (moved from the store's eval
    /// set ingest test, which checks the counts themselves).
    #[test]
    fn eval_results_alone_say_nothing_of_request_records() {
        let r = IngestReport {
            runs_ingested: 2,
            evals: 3,
            batches: ["b".to_string()].into(),
            ..IngestReport::default()
        };
        assert_eq!(
            r.render(),
            "ingested 0 point(s), 3 eval result(s) from 2 source(s) (result directories or \
             files) in 1 batch(es)\n"
        );
    }
}
