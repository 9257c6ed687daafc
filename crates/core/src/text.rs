//! Text helpers for messages a person reads: a batch as tables show it, the closest known name
//! to a typo ("did you mean"), and a server's error body cut to one console line.

/// The candidate most like `name`, when one is close enough to be the intended one: the
/// fewest edits (Damerau–Levenshtein: insert, delete, substitute, swap two neighbours), at most
/// 2 or a fifth of the name's length, whichever is more, and at most 1 for a name under 5
/// characters (trial 20: `b200` → "did you mean h100?", half the name changed); ties go to the
/// higher Jaro–Winkler similarity, then to the first (clap's own suggestions use the same
/// `strsim` crate). `None` when no candidate is that close, or `name` itself is one of them.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = name.chars().count();
    let most = if len < 5 { 1 } else { (len / 5).max(2) };
    candidates
        .into_iter()
        .map(|c| {
            let d = strsim::damerau_levenshtein(name, c);
            (d, strsim::jaro_winkler(name, c), c)
        })
        .filter(|(d, _, _)| *d <= most)
        .fold(None, |best: Option<(usize, f64, &str)>, cand| match best {
            Some(b) if (b.0, -b.1) <= (cand.0, -cand.1) => Some(b),
            _ => Some(cand),
        })
        .filter(|(d, _, _)| *d > 0)
        .map(|(_, _, c)| c)
}

/// `text` as one console line of at most `max_chars` characters: every run of whitespace
/// (newlines of an HTML error page included) becomes one space, the ends are trimmed, and a
/// longer text is cut at a character boundary with `…` appended (so the result has at most
/// `max_chars + 1` characters).
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4 + 3));
    let mut n = 0;
    for word in text.split_whitespace() {
        let sep = usize::from(n > 0);
        if n + sep >= max_chars {
            out.push('…');
            return out;
        }
        if sep == 1 {
            out.push(' ');
            n += 1;
        }
        for c in word.chars() {
            if n == max_chars {
                out.push('…');
                return out;
            }
            out.push(c);
            n += 1;
        }
    }
    out
}

/// Widest `batch` cell of a table: quickstart's `quickstart-YYYYMMDD-HHMMSS-mmm` fits whole;
/// longer names keep their head and their tail (where bench file names and sweep stamps
/// differ) around a `…`; CSV and JSON give them whole.
const BATCH_WIDTH: usize = 32;

/// A batch as tables show it: a result directory's last two components
/// (`/home/u/results/agentic` → `results/agentic`; trial 10: `bench` alone read as the
/// subcommand, not as `results/bench`), a result file's name (`….json`), a name as it is
/// (`quickstart-…`); at most 32 characters (head and tail kept around `…`). `report -f
/// batch=LABEL` matches it.
pub fn batch_label(batch: &str) -> String {
    let trimmed = batch.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.rsplitn(3, '/').collect();
    let is_file = |name: &str| {
        std::path::Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.chars().all(|c| c.is_ascii_alphabetic()))
    };
    let shown = match parts.as_slice() {
        [a, b, ..] if !b.is_empty() && !is_file(a) => format!("{b}/{a}"),
        [a, ..] => a.to_string(),
        [] => String::new(),
    };
    middle_ellipsis(&shown, BATCH_WIDTH)
}

/// `name` cut to at most `width` characters: the first third, `…`, then the end.
fn middle_ellipsis(name: &str, width: usize) -> String {
    let n = name.chars().count();
    if n <= width {
        return name.to_string();
    }
    let head = width / 3;
    let tail = width - head - 1;
    let h: String = name.chars().take(head).collect();
    let t: String = name.chars().skip(n - tail).collect();
    format!("{h}…{t}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_takes_the_fewest_edits_within_a_fifth_of_the_length() {
        let names = ["hardware", "framework", "precision", "model"];
        assert_eq!(closest("hardwre", names), Some("hardware"));
        assert_eq!(closest("framewrok", names), Some("framework"));
        assert_eq!(closest("xyz", names), None);
        // The name itself is not a suggestion.
        assert_eq!(closest("model", names), None);
        // A short name: one edit at most (trial 20).
        let hw = ["h100", "h200", "b200"];
        assert_eq!(closest("b20", hw), Some("b200"));
        assert_eq!(closest("h10", hw), Some("h100"));
        assert_eq!(closest("b300", ["h100"]), None);
    }

    #[test]
    fn one_line_folds_whitespace_and_cuts_with_an_ellipsis() {
        let html =
            "<html>\n  <head><title>502 Bad Gateway</title></head>\n<body>\n</body></html>\n";
        assert_eq!(
            one_line(html, 200),
            "<html> <head><title>502 Bad Gateway</title></head> <body> </body></html>"
        );
        assert_eq!(one_line(html, 12), "<html> <head…");
        assert_eq!(one_line("ab cd", 2), "ab…");
        assert_eq!(one_line("ab cd", 5), "ab cd");
        assert_eq!(one_line("  \n ", 5), "");
        assert_eq!(one_line("é".repeat(10).as_str(), 3), "ééé…");
    }
}
