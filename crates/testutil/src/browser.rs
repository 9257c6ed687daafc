//! Pages in a real browser: headless Chromium (Debian `chromium`, set up by
//! `scripts/setup/chromium.sh`) dumps a page's DOM after its scripts ran, and the few readers
//! the dashboard's browser tests judge that DOM with. One copy for the web crate's
//! `tests/browser.rs` and the CLI's `tests/serve_run_page.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::available;

/// Where `scripts/setup/chromium.sh` is named when Chromium is missing.
const HOW: &str = "scripts/setup/chromium.sh installs it";

/// The Chromium binary: `INFERBENCH_TEST_CHROMIUM`, else `/usr/bin/chromium` when it is a file;
/// `None` after [`available`]'s skip (a panic under `INFERBENCH_REQUIRE_SERVICES=1`).
pub fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("INFERBENCH_TEST_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            let p = PathBuf::from("/usr/bin/chromium");
            p.is_file().then_some(p)
        });
    available(found.is_some(), "chromium", HOW).then(|| found.unwrap_or_default())
}

/// Headless Chromium with one private profile folder, kept across the pages a test loads (so
/// what a page remembers in the browser's storage carries to the next).
pub struct Browser {
    chromium: PathBuf,
    profile: PathBuf,
}

impl Browser {
    /// The browser with its profile in `profile` (created by Chromium), or `None` after
    /// [`chromium`]'s skip.
    pub fn find(profile: PathBuf) -> Option<Self> {
        Some(Self {
            chromium: chromium()?,
            profile,
        })
    }

    /// The DOM of `url` after its scripts ran (fetches included, within 10 s of virtual time).
    /// The browser process is started once more when it fails (a full test run on 2 busy cores
    /// saw headless Chromium exit non-zero once, with nothing wrong in the page): the page is
    /// judged by what it renders, not by one browser crash. Panics when it fails twice or
    /// writes no UTF-8.
    pub fn dom(&self, url: &str) -> String {
        let run = || {
            Command::new(&self.chromium)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--no-first-run",
                    "--virtual-time-budget=10000",
                ])
                .arg(format!("--user-data-dir={}", self.profile.display()))
                .arg("--dump-dom")
                .arg(url)
                .output()
                .unwrap()
        };
        let mut out = run();
        if !out.status.success() {
            eprintln!(
                "chromium exited with {} on {url}; starting it once more",
                out.status
            );
            out = run();
        }
        assert!(
            out.status.success(),
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The profile folder.
    pub fn profile(&self) -> &Path {
        &self.profile
    }
}

/// The value of attribute `attr` of the element with id `id` in `dom` (as the DOM dump writes
/// it: `&` as `&amp;`); `None` when there is no such element or attribute.
pub fn attr(dom: &str, id: &str, attr: &str) -> Option<String> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let tag_start = dom[..at].rfind('<')?;
    let tag_end = at + dom[at..].find('>')?;
    let tag = &dom[tag_start..tag_end];
    let key = format!("{attr}=\"");
    let v = tag.find(&key)? + key.len();
    Some(tag[v..v + tag[v..].find('"')?].to_string())
}

/// The markup between the opening tag of the element with id `id` and the next closing tag.
/// Panics when there is no such element.
pub fn text_of(dom: &str, id: &str) -> String {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap();
    let open = at + dom[at..].find('>').unwrap() + 1;
    let close = open + dom[open..].find("</").unwrap();
    dom[open..close].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_and_text_read_the_element_by_id() {
        let dom = r#"<p id="x" data-n="3" class="a">two <b>b</b></p>"#;
        assert_eq!(attr(dom, "x", "data-n").as_deref(), Some("3"));
        assert_eq!(attr(dom, "x", "title"), None);
        assert_eq!(attr(dom, "y", "data-n"), None);
        assert_eq!(text_of(dom, "x"), "two <b>b");
    }
}
