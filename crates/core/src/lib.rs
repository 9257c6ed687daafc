//! Shared, pure types of inferbench: the per-request record, units, and the metric math every
//! other crate uses. No I/O and no async here (DESIGN.md §2).
//!
//! Data flows one way: config → job → run → [`record::RequestRecord`]s → [`metrics`] →
//! [`summary`] → store → [`analytics`] → views.

pub mod analytics;
pub mod anomaly;
pub mod artifacts;
pub mod exact;
pub mod fallible;
pub mod fingerprint;
pub mod http_fields;
pub mod matrix;
pub mod metrics;
pub mod notice;
pub mod point;
pub mod probe;
pub mod prometheus;
pub mod record;
pub mod registry;
pub mod run_end;
pub mod server_metrics;
pub mod slo;
pub mod summary;
pub mod tempfiles;
pub mod text;

pub use anomaly::Anomaly;
pub use matrix::{Conc, MatrixRow};
pub use run_end::RunEnd;

/// An error with its sources, `outer: cause: …`, each cause once: a message that already quotes
/// its cause (`file: No such file …` over the io::Error) does not repeat it, and one that does
/// not say why (postgres' `error connecting to server`) gets the reason appended.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let m = inner.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = inner.source();
    }
    s
}
/// `n` and its noun, in the plural unless `n` is 1: `count(1, "point")` is `"1 point"`,
/// `count(3, "row")` is `"3 rows"` (nouns that take a plain `s`).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub use record::{AgenticRef, Channel, ChunkRecord, ErrorClass, Phase, RequestRecord, TokenSource};

#[cfg(test)]
mod tests {
    /// Causes are appended once; one the message already quotes is not repeated.
    #[test]
    fn error_chain_appends_each_cause_once() {
        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let refused = E("Connection refused", None);
        let e = E("error connecting to server", Some(Box::new(refused)));
        assert_eq!(
            super::error_chain(&e),
            "error connecting to server: Connection refused"
        );
        let quoted = E(
            "f.jsonl: No such file",
            Some(Box::new(E("No such file", None))),
        );
        assert_eq!(super::error_chain(&quoted), "f.jsonl: No such file");
    }
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn count_says_one_in_the_singular() {
        assert_eq!(super::count(1, "point"), "1 point");
        assert_eq!(super::count(0, "row"), "0 rows");
        assert_eq!(super::count(12, "row"), "12 rows");
    }
}
