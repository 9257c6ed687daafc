//! Executors: where the jobs of a matrix run.
//!
//! - `local`: [`crate::sweep::run_jobs`] in this process, one point after another.
//! - [`slurm`]: an sbatch job array whose task `i` runs
//!   `inferbench job --matrix m.json --index $SLURM_ARRAY_TASK_ID`; results are gathered from the
//!   shared output directory.
//! - [`github`]: the matrix JSON plus a reusable workflow for self-hosted runners.

pub mod github;
pub mod slurm;

/// Quotes `s` for POSIX sh: bare when it only has safe characters, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn shell_quote_cases() {
        assert_eq!(super::shell_quote("a/b-c.json"), "a/b-c.json");
        assert_eq!(super::shell_quote("a b"), "'a b'");
        assert_eq!(super::shell_quote("it's"), r"'it'\''s'");
        assert_eq!(super::shell_quote(""), "''");
    }
}
