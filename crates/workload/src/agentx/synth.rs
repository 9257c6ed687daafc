//! Prompt synthesis from block hashes (reference/agentx.md §2): a trace stores token counts and
//! 64-token block identities only, so every request's prompt is filler built such that (a) it
//! has exactly `in` tokens in token-id space, (b) two requests of one namespace that share a
//! leading run of `hash_ids` get byte-identical leading text, and (c) unrelated blocks differ.
//!
//! Three pieces, all with bounded memory (nothing is cached per hash id — the real corpus has
//! millions of distinct ids):
//!
//! * [`BlockCorpus`]: a deterministic synthetic "coding content" text (code in four languages,
//!   shell output, JSON, tracebacks, diffs, logs; ASCII only), tokenized once and cut into a grid
//!   of 64-token blocks, each decoded once. A hash id maps to a grid block by a fixed 64-bit
//!   hash of (seed, scope, id) (§2.2), so the same id always yields the same 64 token ids and
//!   the same text. Partial tails (< 64 tokens) are a key-derived window of the corpus token ids
//!   (§2.3).
//! * [`Reconstructor`]: per stream, turn by turn, the chat message list as role segments over
//!   block ranges (§2.4) — a [`TurnPlan`] is a few integers per message, never text.
//! * [`render_messages`] / [`render_messages_into`]: the plan as an OpenAI `messages` array, with
//!   the cache-bust marker (§2.6) in front of the first user message.
//!
//! Token counts are exact in token-id space; the server re-tokenizes the text, which drifts by a
//! few tokens where unrelated blocks meet (BPE merges across a join, §2.9).

use super::load::BLOCK_TOKENS;
use super::trace::{Trace, TraceRequest};
use crate::error::WorkloadError;
use crate::tokenizer::Tokenizer;
use rayon::prelude::*;
use serde_json::Value;

/// Minimum corpus size, tokens, of [`BlockCorpus::new`]: 8,192 grid blocks, like AIPerf's
/// ~500k-token corpus (§2.2); ~5 MB held, built in about a second.
pub const DEFAULT_CORPUS_TOKENS: usize = 524_288;

const B: u32 = BLOCK_TOKENS;

// ---- hashing: fixed, documented, platform-independent ----

/// A stable 64-bit key of a string (FNV-1a 64 over its UTF-8 bytes, then [`mix64`]); identical
/// on every platform and release. Used for trace-id scopes and stream keys.
pub fn str_key(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in s.as_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix64(h)
}

/// SplitMix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The block hash of §2.2: `mix64(mix64(mix64(seed) ^ scope) ^ id)`. A hash id `id` of namespace
/// `scope` under run seed `seed` is grid block `hash64(seed, scope, id) % n_blocks`.
pub fn hash64(seed: u64, scope: u64, id: u64) -> u64 {
    mix64(mix64(mix64(seed) ^ scope) ^ id)
}

const TAG_UNIQUE: u64 = 0x756e_6971_7565_626b; // "uniquebk"
const TAG_TAIL: u64 = 0x7061_7274_6961_6c74; // "partialt"

/// Key of the synthesized partial tail of turn `turn` of the stream keyed `stream_key` (§2.3:
/// position-keyed, so it never matches a recorded block). Pass it to [`BlockCorpus::tail_ids`].
pub fn tail_key(stream_key: u64, turn: u32) -> u64 {
    mix64(stream_key ^ TAG_TAIL) ^ turn as u64
}

/// Key of uncovered whole block `index` (one the recorder did not hash) of turn `turn` of the
/// stream keyed `stream_key`: unique to that (stream, turn, index).
pub fn unique_block_key(stream_key: u64, turn: u32, index: u32) -> u64 {
    mix64(stream_key ^ TAG_UNIQUE) ^ ((turn as u64) << 32 | index as u64)
}

// ---- the synthetic coding-content text ----

/// SplitMix64 generator: tiny, seedable, and fixed forever (unlike `rand`'s `StdRng`).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
    fn num(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn hex(&mut self, n: usize) -> String {
        format!("{:016x}", self.next())[..n.min(16)].to_string()
    }
}

const VERBS: &[&str] = &[
    "get",
    "load",
    "parse",
    "build",
    "fetch",
    "update",
    "compute",
    "merge",
    "flush",
    "resolve",
    "encode",
    "decode",
    "validate",
    "render",
    "schedule",
    "emit",
    "collect",
    "drain",
    "split",
    "apply",
    "refresh",
    "evict",
    "spawn",
    "retry",
    "commit",
    "serialize",
    "normalize",
    "prune",
];
const NOUNS: &[&str] = &[
    "user", "cache", "request", "token", "buffer", "config", "session", "worker", "queue", "index",
    "block", "stream", "batch", "handler", "client", "server", "model", "layer", "tensor",
    "record", "metric", "shard", "lease", "route", "event", "span", "frame", "chunk", "prefix",
    "offset", "window", "budget", "replica", "manifest", "schema", "payload",
];
const ADJS: &[&str] = &[
    "raw", "pending", "cached", "active", "next", "last", "local", "remote", "total", "max", "min",
    "default", "shared", "stale", "dirty", "partial", "primary", "inner", "outer",
];
const TYPES: &[&str] = &[
    "Config", "Request", "Response", "Session", "Worker", "Batch", "Record", "Metric", "Shard",
    "Cache", "Index", "Stream", "Event", "Plan", "Schedule", "Snapshot", "Manifest", "Lease",
];
const ERRORS: &[&str] = &[
    "ValueError",
    "KeyError",
    "TypeError",
    "RuntimeError",
    "TimeoutError",
    "FileNotFoundError",
    "AssertionError",
    "IndexError",
    "ConnectionResetError",
    "PermissionError",
];
const DIRS: &[&str] = &[
    "src",
    "lib",
    "pkg",
    "internal",
    "app",
    "tests",
    "cmd",
    "crates/core/src",
    "services/api",
    "frontend/src/components",
    "scripts",
    "tools",
];

fn snake(r: &mut Rng) -> String {
    match r.below(3) {
        0 => format!("{}_{}", r.pick(VERBS), r.pick(NOUNS)),
        1 => format!("{}_{}_{}", r.pick(VERBS), r.pick(ADJS), r.pick(NOUNS)),
        _ => format!("{}_{}", r.pick(ADJS), r.pick(NOUNS)),
    }
}

fn camel(r: &mut Rng) -> String {
    match r.below(2) {
        0 => format!("{}{}", r.pick(VERBS), cap_first(r.pick(NOUNS))),
        _ => format!(
            "{}{}{}",
            r.pick(VERBS),
            cap_first(r.pick(ADJS)),
            cap_first(r.pick(NOUNS))
        ),
    }
}

fn path(r: &mut Rng, ext: &str) -> String {
    format!("{}/{}.{ext}", r.pick(DIRS), snake(r))
}

fn python_fn(r: &mut Rng) -> String {
    let (name, a, b, item) = (snake(r), snake(r), r.pick(NOUNS), r.pick(NOUNS));
    let n = r.num(2, 512);
    let mut s = format!(
        "def {name}({a}, {b}=None, *, limit={n}):\n    \"\"\"{} the {} {item}s of `{a}`.\"\"\"\n    \
         if {a} is None:\n        raise {}(f\"{name}: missing {a} (limit={{limit}})\")\n    \
         result = []\n    for i, {item} in enumerate({a}):\n",
        cap_first(r.pick(VERBS)),
        r.pick(ADJS),
        r.pick(ERRORS),
    );
    for _ in 0..r.num(1, 4) {
        s += &format!(
            "        if {item}.{} > {}:\n            {}.append(({item}.{}, i))\n",
            r.pick(NOUNS),
            r.num(0, 9999),
            if r.below(2) == 0 {
                "result"
            } else {
                "self._pending"
            },
            snake(r),
        );
    }
    s += &format!(
        "        if len(result) >= limit:\n            break\n    logger.debug(\"{name} -> %d\", len(result))\n    return result\n"
    );
    s
}

fn cap_first(s: &str) -> String {
    let mut c = s.to_string();
    if let Some(f) = c.get_mut(..1) {
        f.make_ascii_uppercase();
    }
    c
}

fn rust_fn(r: &mut Rng) -> String {
    let (name, ty, field) = (snake(r), r.pick(TYPES), snake(r));
    let mut s = format!(
        "/// {} the {} {} of a [`{ty}`].\npub fn {name}(input: &{ty}, max_{}: usize) -> Result<Vec<u{}>, Error> {{\n    \
         let mut out = Vec::with_capacity(max_{});\n    for (i, v) in input.{field}.iter().enumerate() {{\n",
        cap_first(r.pick(VERBS)),
        r.pick(ADJS),
        r.pick(NOUNS),
        r.pick(NOUNS),
        [8, 16, 32, 64][r.below(4)],
        r.pick(NOUNS),
    );
    for _ in 0..r.num(1, 3) {
        s += &format!(
            "        if v.{}() > {} {{\n            out.push(i as _);\n        }}\n",
            snake(r),
            r.num(0, 65535)
        );
    }
    s += &format!(
        "    }}\n    if out.is_empty() {{\n        return Err(Error::{}(\"{name}: nothing in {field}\".into()));\n    }}\n    Ok(out)\n}}\n",
        cap_first(r.pick(ADJS))
    );
    s
}

fn go_fn(r: &mut Rng) -> String {
    let (recv, name, ty) = (r.pick(TYPES), cap_first(&camel(r)), r.pick(TYPES));
    format!(
        "func (s *{recv}) {name}(ctx context.Context, id string) (*{ty}, error) {{\n\t\
         s.mu.Lock()\n\tdefer s.mu.Unlock()\n\tv, ok := s.{}[id]\n\tif !ok {{\n\t\t\
         return nil, fmt.Errorf(\"{name}: %s not found in {} (%d entries)\", id, len(s.{}))\n\t}}\n\t\
         if err := v.{}(ctx); err != nil {{\n\t\treturn nil, err\n\t}}\n\t\
         return &{ty}{{ID: id, Count: {}, Ready: {}}}, nil\n}}\n",
        camel(r),
        r.pick(NOUNS),
        camel(r),
        cap_first(&camel(r)),
        r.num(0, 4096),
        ["true", "false"][r.below(2)],
    )
}

fn ts_fn(r: &mut Rng) -> String {
    let (name, ty, n) = (camel(r), r.pick(TYPES), r.pick(NOUNS));
    format!(
        "export async function {name}(opts: {ty}Options): Promise<{ty}[]> {{\n  \
         const res = await fetch(`/api/v{}/{n}s/${{opts.{}}}?limit=${{opts.limit ?? {}}}`);\n  \
         if (!res.ok) {{\n    throw new Error(`{name} failed: ${{res.status}} ${{res.statusText}}`);\n  }}\n  \
         const body = (await res.json()) as {{ items: {ty}[]; next?: string }};\n  \
         return body.items.filter((x) => x.{} !== undefined && x.{} > {});\n}}\n",
        r.num(1, 3),
        camel(r),
        r.num(10, 500),
        camel(r),
        camel(r),
        r.num(0, 100),
    )
}

fn shell(r: &mut Rng) -> String {
    match r.below(3) {
        0 => {
            let mut s = format!("$ ls -la {}\ntotal {}\n", r.pick(DIRS), r.num(8, 900));
            for _ in 0..r.num(3, 10) {
                s += &format!(
                    "-rw-r--r--  1 dev  staff  {:>6} Jun {:>2} {:02}:{:02} {}.{}\n",
                    r.num(120, 99999),
                    r.num(1, 30),
                    r.num(0, 23),
                    r.num(0, 59),
                    snake(r),
                    ["rs", "py", "go", "ts", "json", "md", "toml"][r.below(7)]
                );
            }
            s
        }
        1 => {
            let mut s = "$ cargo test --workspace\n".to_string();
            for _ in 0..r.num(3, 8) {
                s += &format!(
                    "test {}::tests::{} ... {}\n",
                    snake(r),
                    snake(r),
                    ["ok", "ok", "ok", "FAILED", "ignored"][r.below(5)]
                );
            }
            s += &format!(
                "\ntest result: ok. {} passed; {} failed; 0 ignored; finished in {}.{:02}s\n",
                r.num(5, 400),
                r.num(0, 3),
                r.num(0, 40),
                r.num(0, 99)
            );
            s
        }
        _ => format!(
            "$ git status --short\n M {}\n M {}\n?? {}\n$ git log --oneline -3\n{} {} {} in {}\n{} fix {} when {} is empty\n{} bump {} to {}.{}.{}\n",
            path(r, "rs"),
            path(r, "py"),
            path(r, "ts"),
            r.hex(7),
            cap_first(r.pick(VERBS)),
            snake(r),
            r.pick(TYPES),
            r.hex(7),
            snake(r),
            r.pick(NOUNS),
            r.hex(7),
            r.pick(NOUNS),
            r.num(0, 3),
            r.num(0, 30),
            r.num(0, 9)
        ),
    }
}

fn json_doc(r: &mut Rng) -> String {
    let mut s = format!(
        "{{\n  \"id\": \"{}-{}\",\n  \"{}\": {},\n  \"status\": \"{}\",\n  \"tags\": [\"{}\", \"{}\"],\n  \"items\": [\n",
        r.pick(NOUNS),
        r.hex(12),
        snake(r),
        r.num(0, 1_000_000),
        r.pick(ADJS),
        r.pick(NOUNS),
        r.pick(ADJS),
    );
    let n = r.num(1, 4);
    for i in 0..n {
        s += &format!(
            "    {{\"{}\": {}, \"{}\": \"{}\", \"ratio\": {}.{:03}}}{}\n",
            snake(r),
            r.num(0, 99999),
            camel(r),
            r.hex(8),
            r.num(0, 9),
            r.num(0, 999),
            if i + 1 < n { "," } else { "" }
        );
    }
    s + "  ]\n}\n"
}

fn traceback(r: &mut Rng) -> String {
    let mut s = "Traceback (most recent call last):\n".to_string();
    for _ in 0..r.num(2, 5) {
        let f = snake(r);
        s += &format!(
            "  File \"/app/{}\", line {}, in {f}\n    {} = self.{}({}, timeout={})\n",
            path(r, "py"),
            r.num(10, 2000),
            snake(r),
            snake(r),
            snake(r),
            r.num(1, 120)
        );
    }
    s + &format!(
        "{}: {} {} {} (expected {}, got {})\n",
        r.pick(ERRORS),
        r.pick(ADJS),
        r.pick(NOUNS),
        snake(r),
        r.num(0, 512),
        r.num(513, 100_000)
    )
}

fn diff(r: &mut Rng) -> String {
    let ext = ["rs", "py", "go", "ts"][r.below(4)];
    let p = path(r, ext);
    let line = r.num(1, 800);
    let mut s = format!(
        "diff --git a/{p} b/{p}\nindex {}..{} 100644\n--- a/{p}\n+++ b/{p}\n@@ -{line},7 +{line},8 @@ fn {}(\n",
        r.hex(7),
        r.hex(7),
        snake(r)
    );
    for _ in 0..r.num(3, 7) {
        let (a, b) = (snake(r), snake(r));
        s += &match r.below(3) {
            0 => format!("-    let {a} = {b}(&{}, {});\n", snake(r), r.num(0, 99)),
            1 => format!("+    let {a} = {b}(&{}, {})?;\n", snake(r), r.num(0, 99)),
            _ => format!("     {a}.{b}();\n"),
        };
    }
    s
}

fn logs(r: &mut Rng) -> String {
    let mut s = String::new();
    let (h, m) = (r.num(0, 23), r.num(0, 59));
    for _ in 0..r.num(3, 9) {
        s += &format!(
            "2026-06-{:02}T{h:02}:{m:02}:{:02}.{:03}Z {} {}[{}]: {} {} {}s in {}ms (p99={}.{}ms, {}={})\n",
            r.num(1, 28),
            r.num(0, 59),
            r.num(0, 999),
            ["INFO", "INFO", "DEBUG", "WARN", "ERROR"][r.below(5)],
            snake(r),
            r.num(0, 63),
            r.pick(VERBS),
            r.num(1, 100_000),
            r.pick(NOUNS),
            r.num(1, 9999),
            r.num(1, 999),
            r.num(0, 9),
            snake(r),
            r.hex(6)
        );
    }
    s
}

fn config(r: &mut Rng) -> String {
    let mut s = format!("[{}]\n", snake(r));
    for _ in 0..r.num(3, 7) {
        s += &match r.below(3) {
            0 => format!("{} = {}\n", snake(r), r.num(0, 65536)),
            1 => format!("{} = \"{}\"\n", snake(r), path(r, "toml")),
            _ => format!("{} = {}\n", snake(r), ["true", "false"][r.below(2)]),
        };
    }
    s
}

/// One synthetic "coding content" document (ASCII only).
fn document(r: &mut Rng) -> String {
    let mut s = match r.below(11) {
        0 | 1 => python_fn(r),
        2 | 3 => rust_fn(r),
        4 => go_fn(r),
        5 => ts_fn(r),
        6 => shell(r),
        7 => json_doc(r),
        8 => traceback(r),
        9 => diff(r),
        _ => {
            if r.below(2) == 0 {
                logs(r)
            } else {
                config(r)
            }
        }
    };
    s.push('\n');
    s
}

// ---- the block corpus ----

/// The tokenized filler corpus and its grid of 64-token blocks (§2.2), built once per run.
///
/// Every block is exactly 64 corpus token ids; its text is decoded once and kept (raw and
/// JSON-escaped), so assembling a prompt is copying. Memory is ~10 bytes per corpus token
/// (ids, text, escaped text), independent of how many hash ids a trace has.
pub struct BlockCorpus {
    tok: Tokenizer,
    seed: u64,
    ids: Vec<u32>,
    /// Grid texts back to back; block `i` is `text[offs[i]..offs[i + 1]]`.
    text: String,
    offs: Vec<u32>,
    /// The same, JSON-string-escaped (what [`render_messages_into`] copies).
    esc: String,
    esc_offs: Vec<u32>,
}

impl std::fmt::Debug for BlockCorpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCorpus")
            .field("tokenizer", &self.tok.id())
            .field("seed", &self.seed)
            .field("tokens", &self.ids.len())
            .field("blocks", &self.n_blocks())
            .finish()
    }
}

impl BlockCorpus {
    /// A corpus of at least [`DEFAULT_CORPUS_TOKENS`] tokens under `tok`, its content fixed by
    /// `seed` (the run's `--random-seed`; AIPerf's dataset identity includes it, §2.2).
    ///
    /// # Errors
    /// [`WorkloadError::Tokenizer`] when the tokenizer yields too few tokens for the text.
    pub fn new(tok: &Tokenizer, seed: u64) -> Result<Self, WorkloadError> {
        Self::with_min_tokens(tok, seed, DEFAULT_CORPUS_TOKENS)
    }

    /// As [`Self::new`] with at least `min_tokens` corpus tokens (raised to 64). More tokens mean
    /// more distinct grid blocks (two unrelated hash ids share a block with probability
    /// `1 / n_blocks`).
    ///
    /// # Errors
    /// [`WorkloadError::Tokenizer`] when the tokenizer yields too few tokens for the text.
    pub fn with_min_tokens(
        tok: &Tokenizer,
        seed: u64,
        min_tokens: usize,
    ) -> Result<Self, WorkloadError> {
        let min_tokens = min_tokens.max(B as usize);
        let mut rng = Rng(seed ^ 0x636f_7270_7573_3031); // "corpus01"
        let mut ids: Vec<u32> = Vec::with_capacity(min_tokens + 4096);
        for _round in 0..64 {
            if ids.len() >= min_tokens {
                break;
            }
            // ~3.5 bytes per token for this content; documents tokenized separately (each
            // boundary is a token boundary), in parallel, appended in order.
            let want_bytes = (min_tokens - ids.len()) * 4 + 4096;
            let mut docs = Vec::new();
            let mut bytes = 0;
            while bytes < want_bytes {
                let d = document(&mut rng);
                bytes += d.len();
                docs.push(d);
            }
            let enc: Vec<Vec<u32>> = docs.par_iter().map(|d| tok.encode(d)).collect();
            ids.extend(enc.into_iter().flatten());
        }
        if ids.len() < min_tokens {
            return Err(WorkloadError::Tokenizer {
                spec: tok.id().to_string(),
                reason: format!(
                    "yields only {} tokens for the synthetic prompt corpus (need {min_tokens})",
                    ids.len()
                ),
            });
        }
        let n_blocks = ids.len() / B as usize;
        let texts: Vec<String> = (0..n_blocks)
            .into_par_iter()
            .map(|i| tok.decode(&ids[i * B as usize..(i + 1) * B as usize]))
            .collect();
        let mut text = String::with_capacity(texts.iter().map(String::len).sum());
        let mut offs = Vec::with_capacity(n_blocks + 1);
        let mut esc = Vec::with_capacity(text.capacity() + text.capacity() / 8);
        let mut esc_offs = Vec::with_capacity(n_blocks + 1);
        offs.push(0);
        esc_offs.push(0);
        for t in &texts {
            text.push_str(t);
            offs.push(text.len() as u32);
            escape_json_into(&mut esc, t);
            esc_offs.push(esc.len() as u32);
        }
        // escape_json_into writes valid UTF-8 (ASCII escapes around the input's own chars).
        let esc = String::from_utf8(esc).unwrap_or_default();
        Ok(BlockCorpus {
            tok: tok.clone(),
            seed,
            ids,
            text,
            offs,
            esc,
            esc_offs,
        })
    }

    /// The tokenizer the corpus was built with (the served model's, ideally; §2.2).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tok
    }

    /// The seed the corpus content and the block mapping derive from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Corpus length, tokens.
    pub fn len_tokens(&self) -> usize {
        self.ids.len()
    }

    /// Number of 64-token grid blocks (`len_tokens / 64`).
    pub fn n_blocks(&self) -> usize {
        self.offs.len() - 1
    }

    /// Grid index of hash id `hash_id` in namespace `scope`: [`hash64`]`(seed, scope, id) %
    /// n_blocks`.
    pub fn block_index(&self, scope: u64, hash_id: u32) -> usize {
        (hash64(self.seed, scope, hash_id as u64) % self.n_blocks() as u64) as usize
    }

    /// Grid index for an arbitrary 64-bit key (e.g. [`unique_block_key`]).
    pub fn keyed_index(&self, key: u64) -> usize {
        (hash64(self.seed, TAG_UNIQUE, key) % self.n_blocks() as u64) as usize
    }

    /// Text of grid block `i` (`i < n_blocks`, else empty).
    pub fn grid_text(&self, i: usize) -> &str {
        match (self.offs.get(i), self.offs.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.text[a as usize..b as usize],
            _ => "",
        }
    }

    /// JSON-string-escaped text of grid block `i` (no quotes around it).
    pub fn grid_text_escaped(&self, i: usize) -> &str {
        match (self.esc_offs.get(i), self.esc_offs.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.esc[a as usize..b as usize],
            _ => "",
        }
    }

    /// The 64 token ids of grid block `i` (`i < n_blocks`, else empty).
    pub fn grid_ids(&self, i: usize) -> &[u32] {
        let (a, b) = (i * B as usize, (i + 1) * B as usize);
        self.ids.get(a..b).unwrap_or(&[])
    }

    /// Text of hash id `hash_id` in namespace `scope` (64 tokens' worth).
    pub fn block_text(&self, scope: u64, hash_id: u32) -> &str {
        self.grid_text(self.block_index(scope, hash_id))
    }

    /// The 64 token ids of hash id `hash_id` in namespace `scope`.
    pub fn block_ids(&self, scope: u64, hash_id: u32) -> &[u32] {
        self.grid_ids(self.block_index(scope, hash_id))
    }

    /// `n` consecutive corpus token ids (a partial tail, §2.3) from an offset derived from `key`
    /// ([`tail_key`]): `hash64(seed, TAIL, key) % (len − n + 1)`. `n` is clamped to the corpus
    /// length.
    pub fn tail_ids(&self, key: u64, n: usize) -> &[u32] {
        let n = n.min(self.ids.len());
        let span = (self.ids.len() - n + 1) as u64;
        let at = (hash64(self.seed, TAG_TAIL, key) % span) as usize;
        &self.ids[at..at + n]
    }

    /// Text of [`Self::tail_ids`] (decoded on demand; ASCII, so no character is split).
    pub fn tail_text(&self, key: u64, n: usize) -> String {
        self.tok.decode(self.tail_ids(key, n))
    }
}

/// Appends `s` JSON-string-escaped (no surrounding quotes) exactly as serde_json writes it:
/// `"` `\` and control characters escaped (`\b \t \n \f \r`, others `\u00XX`), all else as is.
pub fn escape_json_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(b >> 4) as usize],
                    HEX[(b & 15) as usize],
                ]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

// ---- per-stream message reconstruction (§2.4) ----

/// A chat role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The merged tools + system prefix (at most one, first).
    System,
    /// User input / tool results; every request ends with one.
    User,
    /// The replayed (pre-canned) previous answer.
    Assistant,
}

impl Role {
    /// The OpenAI `role` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a [`TurnPlan`]: blocks `first_block..end_block` of the current request
/// (index `i < covered_blocks` is `hash_ids[i]`, beyond that a synthesized unique block) plus,
/// for the last message only, `tail_tokens` synthesized tokens (< 64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Role of the message.
    pub role: Role,
    /// First block index (inclusive).
    pub first_block: u32,
    /// Last block index (exclusive).
    pub end_block: u32,
    /// Synthesized tail tokens after the blocks, `0..64`.
    pub tail_tokens: u32,
}

impl Segment {
    /// Token count of the segment in token-id space: `64 × blocks + tail_tokens`.
    pub fn tokens(&self) -> u32 {
        (self.end_block - self.first_block) * B + self.tail_tokens
    }
}

/// The full message list of one turn as block ranges (§2.4): what to send, not the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnPlan {
    /// Messages in order; adjacent same-role ranges merged; the last is always [`Role::User`].
    pub segments: Vec<Segment>,
    /// 0-based turn index within the stream.
    pub turn: u32,
    /// Key of the stream ([`str_key`] of its id), which keys the synthesized blocks and tail.
    pub stream_key: u64,
    /// Whole blocks backed by a recorded hash id: `min(len(hash_ids), floor(in / 64))`.
    pub covered_blocks: u32,
    /// Whole blocks of the prompt, `floor(in / 64)` (covered + synthesized unique ones).
    pub total_blocks: u32,
    /// Synthesized partial tail, tokens: `in − 64 × total_blocks`.
    pub tail_tokens: u32,
    /// Longest common prefix with the previous turn, covered blocks (0 on turn 0).
    pub lcp_blocks: u32,
    /// Blocks of this turn's new region labelled assistant (`ceil(out[k−1] / 64)`, capped).
    pub new_assistant_blocks: u32,
    /// The previous prompt is not a block-prefix of this one (compaction / pull-back: the LCP
    /// is shorter than the previous prompt's whole blocks), so earlier messages changed. The
    /// plan is the full list either way; this flags that a stateful sender must re-send it.
    pub reset_context: bool,
    /// Prompt length in token-id space, always the request's `in` (before chat template and
    /// marker).
    pub prompt_tokens: u32,
}

/// Blocks of the shared system segment of a trace's streams (§2.4 turn 0):
/// `ceil(system_prefix_tokens / 64)` of the declared `tool_tokens + system_tokens`, else 0.
/// As agentx-harness 1.0.12: no prefix is derived from the streams' common first blocks — an
/// unmarked system message would carry KV across plays despite the cache-bust marker
/// (measured: recycled plays got their first turn's shared blocks from the cache,
/// docs/agentx-harness-comparison.md §7).
pub fn system_prefix_blocks(trace: &Trace) -> u32 {
    trace.system_prefix_tokens.div_ceil(B)
}

fn covered(r: &TraceRequest) -> u32 {
    (r.hash_ids.len() as u32).min(r.input_tokens / B)
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Per-stream message reconstruction (§2.4), fed turn by turn. State is the previous turn's
/// segment list (a few integers per message).
#[derive(Debug, Clone)]
pub struct Reconstructor {
    stream_key: u64,
    system_blocks: u32,
    segs: Vec<Segment>,
    next_turn: u32,
}

impl Reconstructor {
    /// A reconstructor for the stream keyed `stream_key` whose turn 0 opens with a system segment
    /// of `system_prefix_blocks` blocks (capped so the user message keeps at least one block).
    pub fn new(stream_key: u64, system_prefix_blocks: u32) -> Self {
        Reconstructor {
            stream_key,
            system_blocks: system_prefix_blocks,
            segs: Vec::new(),
            next_turn: 0,
        }
    }

    /// The reconstructor for `trace.streams[stream]`: key [`str_key`] of the stream id, system
    /// segment from [`system_prefix_blocks`]. An out-of-range index gets key 0.
    pub fn for_stream(trace: &Trace, stream: usize) -> Self {
        let key = trace.streams.get(stream).map_or(0, |s| str_key(&s.id));
        Self::new(key, system_prefix_blocks(trace))
    }

    /// Plans the next turn: `req` with `prev` = the stream's previous request (`None` starts
    /// the conversation over as turn 0).
    ///
    /// Turn 0: system blocks (if any), the rest plus the tail as one user message. Turn k > 0:
    /// the previous messages truncated to the LCP of the two hash lists; the new region's first
    /// `ceil(out[k−1] / 64)` blocks are the assistant answer (never all of them: the last block
    /// goes to the user), the rest and the tail a user message; if truncation left no user
    /// message, the whole region is user. The list always ends with a user message (a
    /// degenerate turn relabels its last block).
    pub fn next_turn(&mut self, req: &TraceRequest, prev: Option<&TraceRequest>) -> TurnPlan {
        let total = req.input_tokens / B;
        let cov = covered(req);
        let tail = req.input_tokens - total * B;
        let mut segs: Vec<Segment> = Vec::with_capacity(self.segs.len() + 2);
        let seg = |role, first_block, end_block, tail_tokens| Segment {
            role,
            first_block,
            end_block,
            tail_tokens,
        };
        let (turn, lcp, reset, asst) = match prev {
            None => {
                let sys = self.system_blocks.min(total.saturating_sub(1));
                if sys > 0 {
                    segs.push(seg(Role::System, 0, sys, 0));
                }
                segs.push(seg(Role::User, sys, total, tail));
                (0, 0, false, 0)
            }
            Some(p) => {
                let p_total = p.input_tokens / B;
                let lcp = common_prefix(
                    &p.hash_ids[..covered(p) as usize],
                    &req.hash_ids[..cov as usize],
                ) as u32;
                for s in &self.segs {
                    if s.first_block >= lcp {
                        break;
                    }
                    segs.push(seg(s.role, s.first_block, s.end_block.min(lcp), 0));
                }
                let start = segs.last().map_or(0, |s| s.end_block);
                let has_user = segs.iter().any(|s| s.role == Role::User);
                let new_blocks = total - start;
                let asst = if has_user {
                    p.output_tokens
                        .div_ceil(B)
                        .min(new_blocks.saturating_sub(1))
                } else {
                    0
                };
                if asst > 0 {
                    segs.push(seg(Role::Assistant, start, start + asst, 0));
                }
                segs.push(seg(Role::User, start + asst, total, tail));
                (self.next_turn.max(1), lcp, lcp < p_total, asst)
            }
        };
        segs.retain(|s| s.tokens() > 0);
        // Every request ends with a user message.
        match segs.last_mut() {
            Some(last) if last.role != Role::User => {
                let b = last.end_block - 1; // tokens() > 0 and no tail off the user segment
                last.end_block = b;
                let empty = last.first_block == b;
                segs.push(seg(Role::User, b, b + 1, 0));
                if empty {
                    segs.remove(segs.len() - 2);
                }
            }
            None => segs.push(seg(Role::User, 0, 0, 0)),
            _ => {}
        }
        let mut merged: Vec<Segment> = Vec::with_capacity(segs.len());
        for s in segs {
            match merged.last_mut() {
                Some(m) if m.role == s.role => {
                    m.end_block = s.end_block;
                    m.tail_tokens = s.tail_tokens;
                }
                _ => merged.push(s),
            }
        }
        self.segs.clone_from(&merged);
        self.next_turn = turn + 1;
        TurnPlan {
            prompt_tokens: merged.iter().map(Segment::tokens).sum(),
            segments: merged,
            turn,
            stream_key: self.stream_key,
            covered_blocks: cov,
            total_blocks: total,
            tail_tokens: tail,
            lcp_blocks: lcp,
            new_assistant_blocks: asst,
            reset_context: reset,
        }
    }
}

/// Plans every turn of `trace.streams[stream]` in order (empty for an out-of-range index).
pub fn plan_stream(trace: &Trace, stream: usize) -> Vec<TurnPlan> {
    let mut rc = Reconstructor::for_stream(trace, stream);
    let Some(s) = trace.streams.get(stream) else {
        return Vec::new();
    };
    s.requests
        .iter()
        .enumerate()
        .map(|(i, r)| rc.next_turn(r, i.checked_sub(1).map(|j| &s.requests[j])))
        .collect()
}

// ---- rendering ----

/// Grid index of block `b` of the plan's request.
fn grid_of(plan: &TurnPlan, req: &TraceRequest, corpus: &BlockCorpus, scope: u64, b: u32) -> usize {
    match req.hash_ids.get(b as usize) {
        Some(&h) if b < plan.covered_blocks => corpus.block_index(scope, h),
        _ => corpus.keyed_index(unique_block_key(plan.stream_key, plan.turn, b)),
    }
}

/// Index of the first user message (where the marker goes).
fn first_user(plan: &TurnPlan) -> Option<usize> {
    plan.segments.iter().position(|s| s.role == Role::User)
}

/// The plan as an OpenAI chat `messages` array of `{"role", "content"}` (§2.4, §2.8): each
/// message's content is its blocks' texts back to back (hash ids of namespace `scope`, see
/// [`Trace::hash_scope_key`]) plus the synthesized tail; `marker` (the cache-bust marker, e.g.
/// [`crate::cache_bust_marker`], §2.6) is prepended to the first user message only.
pub fn render_messages(
    plan: &TurnPlan,
    req: &TraceRequest,
    corpus: &BlockCorpus,
    scope: u64,
    marker: Option<&str>,
) -> Value {
    let fu = first_user(plan);
    let msgs = plan
        .segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut content = String::with_capacity(s.tokens() as usize * 5);
            if fu == Some(i) {
                content.push_str(marker.unwrap_or(""));
            }
            for b in s.first_block..s.end_block {
                content.push_str(corpus.grid_text(grid_of(plan, req, corpus, scope, b)));
            }
            if s.tail_tokens > 0 {
                content.push_str(
                    &corpus.tail_text(tail_key(plan.stream_key, plan.turn), s.tail_tokens as usize),
                );
            }
            let mut m = serde_json::Map::new();
            m.insert("role".into(), Value::from(s.role.as_str()));
            m.insert("content".into(), Value::from(content));
            Value::Object(m)
        })
        .collect();
    Value::Array(msgs)
}

/// As [`render_messages`], appending the JSON array's bytes to `out` directly (byte-identical
/// to `serde_json::to_vec` of the value): block texts are copied pre-escaped, so a body costs
/// about one memcpy of its text.
pub fn render_messages_into(
    out: &mut Vec<u8>,
    plan: &TurnPlan,
    req: &TraceRequest,
    corpus: &BlockCorpus,
    scope: u64,
    marker: Option<&str>,
) {
    let fu = first_user(plan);
    out.reserve(plan.prompt_tokens as usize * 5 + 64);
    out.push(b'[');
    for (i, s) in plan.segments.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"role\":\"");
        out.extend_from_slice(s.role.as_str().as_bytes());
        out.extend_from_slice(b"\",\"content\":\"");
        if fu == Some(i) {
            escape_json_into(out, marker.unwrap_or(""));
        }
        for b in s.first_block..s.end_block {
            let g = grid_of(plan, req, corpus, scope, b);
            out.extend_from_slice(corpus.grid_text_escaped(g).as_bytes());
        }
        if s.tail_tokens > 0 {
            let t = corpus.tail_text(tail_key(plan.stream_key, plan.turn), s.tail_tokens as usize);
            escape_json_into(out, &t);
        }
        out.extend_from_slice(b"\"}");
    }
    out.push(b']');
}

/// The plan's messages in token-id space: per message its role and exactly its token ids
/// (Σ = `in`; the marker, being text, is not included). For servers that take token ids, and
/// to check what [`render_messages`] decodes from.
pub fn plan_token_ids(
    plan: &TurnPlan,
    req: &TraceRequest,
    corpus: &BlockCorpus,
    scope: u64,
) -> Vec<(Role, Vec<u32>)> {
    plan.segments
        .iter()
        .map(|s| {
            let mut ids = Vec::with_capacity(s.tokens() as usize);
            for b in s.first_block..s.end_block {
                ids.extend_from_slice(corpus.grid_ids(grid_of(plan, req, corpus, scope, b)));
            }
            if s.tail_tokens > 0 {
                ids.extend_from_slice(
                    corpus.tail_ids(tail_key(plan.stream_key, plan.turn), s.tail_tokens as usize),
                );
            }
            (s.role, ids)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentx::load::tests::example_traces;
    use std::sync::OnceLock;

    fn corpus() -> &'static BlockCorpus {
        static C: OnceLock<BlockCorpus> = OnceLock::new();
        C.get_or_init(|| {
            let t = std::time::Instant::now();
            let c = BlockCorpus::new(&Tokenizer::load("o200k_base").unwrap(), 42).unwrap();
            eprintln!("corpus: {c:?} built in {:?}", t.elapsed());
            c
        })
    }

    fn req(input_tokens: u32, output_tokens: u32, hash_ids: Vec<u32>) -> TraceRequest {
        TraceRequest {
            t_s: 0.0,
            input_tokens,
            output_tokens,
            hash_ids,
            api_time_s: 1.0,
            model: String::new(),
        }
    }

    fn seg(role: Role, first_block: u32, end_block: u32, tail_tokens: u32) -> Segment {
        Segment {
            role,
            first_block,
            end_block,
            tail_tokens,
        }
    }

    use Role::{Assistant as A, System as S, User as U};

    fn contents(v: &Value) -> Vec<(String, String)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_string(),
                    m["content"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// Structural invariants every plan must satisfy.
    fn check_plan(p: &TurnPlan, r: &TraceRequest) {
        assert_eq!(p.prompt_tokens, r.input_tokens, "{p:?}");
        let segs = &p.segments;
        assert_eq!(segs.last().unwrap().role, U, "{p:?}");
        assert_eq!(segs[0].first_block, 0, "{p:?}");
        for w in segs.windows(2) {
            assert_eq!(w[0].end_block, w[1].first_block, "{p:?}");
            assert_ne!(w[0].role, w[1].role, "{p:?}");
            assert_eq!(w[0].tail_tokens, 0, "{p:?}");
        }
        assert!(segs.iter().skip(1).all(|s| s.role != S), "{p:?}");
        assert_eq!(segs.last().unwrap().end_block, p.total_blocks, "{p:?}");
        assert_eq!(segs.last().unwrap().tail_tokens, p.tail_tokens, "{p:?}");
        assert!(p.tail_tokens < 64);
    }

    #[test]
    fn corpus_grid_blocks_are_64_ids_of_ascii_text() {
        let c = corpus();
        assert!(c.len_tokens() >= DEFAULT_CORPUS_TOKENS);
        assert_eq!(c.n_blocks(), c.len_tokens() / 64);
        let tok = c.tokenizer();
        for i in (0..c.n_blocks()).step_by(97) {
            assert_eq!(c.grid_ids(i).len(), 64);
            let t = c.grid_text(i);
            assert!(t.is_ascii() && !t.is_empty());
            assert_eq!(tok.decode(c.grid_ids(i)), t);
            let esc: String =
                serde_json::from_str(&format!("\"{}\"", c.grid_text_escaped(i))).unwrap();
            assert_eq!(esc, t);
        }
        assert_eq!(c.grid_text(c.n_blocks()), "");
        assert!(c.grid_ids(c.n_blocks()).is_empty());
        // Deterministic per seed; a different seed gives different content.
        let small = |seed| BlockCorpus::with_min_tokens(tok, seed, 2048).unwrap();
        let (a, b, d) = (small(7), small(7), small(8));
        assert_eq!(a.ids, b.ids);
        assert_eq!(a.text, b.text);
        assert_ne!(a.text, d.text);
        // Pinned: the hash and the generated content are part of the contract (changing either
        // changes every prompt of a seed, so it must be deliberate).
        assert_eq!(hash64(1, 2, 3), 0xd073_4750_fde3_62b3);
        assert_eq!(str_key("abc"), 0x29e3_2c04_ec3f_9c30);
        assert_eq!(
            str_key(&a.text),
            0x1b5e_2452_bae9_0479,
            "corpus text key: {:#x}",
            str_key(&a.text)
        );
    }

    #[test]
    fn same_ids_same_text_unrelated_ids_differ() {
        let c = corpus();
        let scope = str_key("trace-a");
        assert_eq!(c.block_text(scope, 17), c.block_text(scope, 17));
        assert_eq!(c.block_ids(scope, 17).len(), 64);
        let n = 2000u32;
        let distinct: std::collections::HashSet<&str> =
            (0..n).map(|h| c.block_text(scope, h)).collect();
        // Birthday bound for 2000 draws from 8192+ blocks: ~89 % distinct.
        assert!(
            distinct.len() as f64 >= 0.85 * n as f64,
            "{}",
            distinct.len()
        );
        let same_adjacent = (0..n - 1)
            .filter(|&h| c.block_index(scope, h) == c.block_index(scope, h + 1))
            .count();
        assert!(same_adjacent <= 3, "{same_adjacent}");
        // Local namespaces: the same id in another trace is (almost surely) another block.
        let other = str_key("trace-b");
        let same_across = (0..n)
            .filter(|&h| c.block_index(scope, h) == c.block_index(other, h))
            .count();
        assert!(same_across <= 3, "{same_across}");
        // Tails: deterministic per key, n tokens, differ across keys.
        assert_eq!(c.tail_ids(tail_key(1, 2), 42).len(), 42);
        assert_eq!(
            c.tail_ids(tail_key(1, 2), 42),
            c.tail_ids(tail_key(1, 2), 42)
        );
        assert_ne!(
            c.tail_ids(tail_key(1, 2), 42),
            c.tail_ids(tail_key(1, 3), 42)
        );
        assert_eq!(c.tail_text(5, 10), c.tokenizer().decode(c.tail_ids(5, 10)));
        assert_eq!(c.tail_ids(5, usize::MAX).len(), c.len_tokens());
    }

    #[test]
    fn appendix_a_walk_through() {
        let ex = example_traces();
        let a = &ex[0];
        assert_eq!(system_prefix_blocks(a), 0);
        let plans = plan_stream(a, 0);
        assert_eq!(plans[0].segments, [seg(U, 0, 19, 0)]);
        // Turn 1: LCP 19, 8 new blocks: ceil(312/64) = 5 assistant, 3 user.
        assert_eq!(plans[1].lcp_blocks, 19);
        assert_eq!(plans[1].new_assistant_blocks, 5);
        assert_eq!(
            plans[1].segments,
            [seg(U, 0, 19, 0), seg(A, 19, 24, 0), seg(U, 24, 27, 0)]
        );
        // Turn 2: in 2090, 33 ids → 32 covered + 42-token tail; LCP 27; ceil(96/64) = 2
        // assistant, user 3 blocks + tail.
        let p = &plans[2];
        assert_eq!(
            (
                p.covered_blocks,
                p.total_blocks,
                p.tail_tokens,
                p.lcp_blocks
            ),
            (32, 32, 42, 27)
        );
        assert_eq!(
            p.segments,
            [
                seg(U, 0, 19, 0),
                seg(A, 19, 24, 0),
                seg(U, 24, 27, 0),
                seg(A, 27, 29, 0),
                seg(U, 29, 32, 42)
            ]
        );
        assert!(plans.iter().all(|p| !p.reset_context));
        assert_eq!(plans.iter().map(|p| p.turn).collect::<Vec<_>>(), [0, 1, 2]);

        // Trace b: the root's and the sub-agent's first requests share 2 blocks, but no system
        // prefix is declared, so there is no system message (agentx-harness 1.0.12).
        let b = &ex[1];
        assert_eq!(system_prefix_blocks(b), 0);
        let root = plan_stream(b, 0);
        assert_eq!(root[0].segments, [seg(U, 0, 20, 0)]);
        // 4 new blocks, ceil(210/64) = 4 capped at 3: the last block stays user.
        assert_eq!(
            root[1].segments,
            [seg(U, 0, 20, 0), seg(A, 20, 23, 0), seg(U, 23, 24, 0)]
        );
        // The join turn: new region 37..41 = 3 assistant (ceil(180/64)) + 2 user blocks.
        assert_eq!(root[2].lcp_blocks, 24);
        assert_eq!(
            root[2].segments[3..],
            [seg(A, 24, 27, 0), seg(U, 27, 29, 0)]
        );
        // A declared prefix becomes the one system message.
        let mut declared = b.clone();
        declared.system_prefix_tokens = 100;
        assert_eq!(system_prefix_blocks(&declared), 2);
        assert_eq!(
            plan_stream(&declared, 0)[0].segments,
            [seg(S, 0, 2, 0), seg(U, 2, 20, 0)]
        );
        let sub = plan_stream(b, 1);
        assert_eq!(sub[0].segments, [seg(U, 0, 11, 0)]);
        assert_eq!(
            sub[1].segments,
            [seg(U, 0, 11, 0), seg(A, 11, 14, 0), seg(U, 14, 15, 0)]
        );
    }

    #[test]
    fn every_example_request_has_exactly_in_tokens_and_ends_with_user() {
        let c = corpus();
        let marker = crate::cache_bust_marker(0x0123_4567_89ab);
        for t in example_traces() {
            let scope = t.hash_scope_key();
            for (si, s) in t.streams.iter().enumerate() {
                for (p, r) in plan_stream(&t, si).iter().zip(&s.requests) {
                    check_plan(p, r);
                    let ids = plan_token_ids(p, r, c, scope);
                    assert_eq!(
                        ids.iter().map(|(_, v)| v.len()).sum::<usize>(),
                        r.input_tokens as usize
                    );
                    let msgs = contents(&render_messages(p, r, c, scope, None));
                    assert_eq!(msgs.len(), ids.len());
                    for ((role, text), (id_role, v)) in msgs.iter().zip(&ids) {
                        assert_eq!(role, id_role.as_str());
                        assert_eq!(&c.tokenizer().decode(v), text);
                    }
                    assert_eq!(msgs.last().unwrap().0, "user");
                    // The marker goes on the first user message only.
                    let marked = contents(&render_messages(p, r, c, scope, Some(&marker)));
                    let fu = msgs.iter().position(|m| m.0 == "user").unwrap();
                    for (i, (m, u)) in marked.iter().zip(&msgs).enumerate() {
                        if i == fu {
                            assert_eq!(m.1, format!("{marker}{}", u.1));
                        } else {
                            assert_eq!(m, u);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn shared_leading_ids_give_byte_identical_prefixes() {
        let c = corpus();
        let ex = example_traces();
        let (a, b) = (&ex[0], &ex[1]);
        let render = |t: &Trace, si: usize| -> Vec<Vec<(String, String)>> {
            plan_stream(t, si)
                .iter()
                .zip(&t.streams[si].requests)
                .map(|(p, r)| {
                    contents(&render_messages(
                        p,
                        r,
                        c,
                        t.hash_scope_key(),
                        Some("[rid:x]\n\n"),
                    ))
                })
                .collect()
        };
        let ta = render(a, 0);
        // Turn 1's messages are turn 2's first three, byte for byte; turn 0's only message is
        // the leading 19 blocks of turn 1's first.
        assert_eq!(ta[1][..], ta[2][..3]);
        assert_eq!(ta[0][0], ta[1][0]);
        // Root and sub-agent of trace b: one user message each, the same marker and 2 shared
        // blocks first (byte-identical leading text), then different text.
        let (root, sub) = (render(b, 0), render(b, 1));
        assert_eq!(root[0][0].0, "user");
        assert_eq!(root[0][0].1[..300], sub[0][0].1[..300]);
        assert_ne!(root[0][0], sub[0][0]);
        // The same ids in another (local) trace are other text.
        let r1 = &a.streams[0].requests[0];
        let p1 = plan_stream(a, 0).remove(0);
        let other = contents(&render_messages(&p1, r1, c, str_key("another trace"), None));
        let mine = contents(&render_messages(&p1, r1, c, a.hash_scope_key(), None));
        assert_ne!(other, mine);
        // Two requests sharing their first 10 of 16 ids share exactly the text of those 10.
        let x = req(1024, 1, (0..16).collect());
        let y = req(1024 + 30, 1, (0..10).chain(100..106).collect());
        let mut rc = Reconstructor::new(1, 0);
        let px = rc.next_turn(&x, None);
        let py = rc.next_turn(&y, None);
        let cx = contents(&render_messages(&px, &x, c, 9, None)).remove(0).1;
        let cy = contents(&render_messages(&py, &y, c, 9, None)).remove(0).1;
        let ten: usize = (0..10).map(|h| c.block_text(9, h).len()).sum();
        assert_eq!(cx[..ten], cy[..ten]);
        assert_ne!(cx[ten..ten + 50], cy[ten..ten + 50]);
    }

    #[test]
    fn partial_tails_and_truncated_hash_lists() {
        let c = corpus();
        // in 1000 = 15 whole blocks + 40, only 5 recorded ids: 10 unique blocks + tail.
        let r0 = req(1000, 100, vec![1, 2, 3, 4, 5]);
        let mut rc = Reconstructor::new(77, 0);
        let p0 = rc.next_turn(&r0, None);
        assert_eq!(
            (p0.covered_blocks, p0.total_blocks, p0.tail_tokens),
            (5, 15, 40)
        );
        assert_eq!(p0.segments, [seg(U, 0, 15, 40)]);
        check_plan(&p0, &r0);
        let ids0 = plan_token_ids(&p0, &r0, c, 3).remove(0).1;
        assert_eq!(ids0.len(), 1000);
        assert_eq!(&ids0[..64], c.block_ids(3, 1));
        assert_eq!(&ids0[960..], c.tail_ids(tail_key(77, 0), 40));
        // Next turn: the same 5 ids then more; the uncovered blocks and the tail of turn 0 are
        // not reused (they were never recorded), so the prompt is reset past block 5.
        let r1 = req(1100, 10, vec![1, 2, 3, 4, 5, 6, 7]);
        let p1 = rc.next_turn(&r1, Some(&r0));
        check_plan(&p1, &r1);
        assert_eq!(p1.lcp_blocks, 5);
        assert!(p1.reset_context);
        // 17 blocks + 12; new region 5..17: ceil(100/64) = 2 assistant, 10 user + tail.
        assert_eq!(
            p1.segments,
            [seg(U, 0, 5, 0), seg(A, 5, 7, 0), seg(U, 7, 17, 12)]
        );
        let ids1 = plan_token_ids(&p1, &r1, c, 3);
        assert_eq!(ids1[0].1[..], ids0[..320]);
        // Uncovered block 7 of turn 1 is not turn 0's block 7 (keyed by turn).
        assert_ne!(ids1[2].1[..64], ids0[7 * 64..8 * 64]);
        // A prompt shorter than a block: the tail is all of it.
        let small = req(40, 1, vec![9]);
        let p = Reconstructor::new(1, 5).next_turn(&small, None);
        assert_eq!(p.segments, [seg(U, 0, 0, 40)]);
        assert_eq!(p.covered_blocks, 0);
        check_plan(&p, &small);
        // in = 0: one empty user message.
        let zero = req(0, 1, vec![]);
        let p = Reconstructor::new(1, 5).next_turn(&zero, None);
        assert_eq!(p.segments, [seg(U, 0, 0, 0)]);
        assert_eq!(
            contents(&render_messages(&p, &zero, c, 0, Some("M"))),
            [("user".into(), "M".into())]
        );
    }

    #[test]
    fn compaction_resets_and_resends_the_full_list() {
        let r0 = req(640, 64, (0..10).collect());
        let r1 = req(1280, 200, (0..20).collect());
        // Compaction: only the first 5 blocks survive, then a new summary region.
        let r2 = req(960 + 7, 64, (0..5).chain(100..110).collect());
        let mut rc = Reconstructor::new(5, 0);
        let p0 = rc.next_turn(&r0, None);
        let p1 = rc.next_turn(&r1, Some(&r0));
        let p2 = rc.next_turn(&r2, Some(&r1));
        assert!(!p1.reset_context);
        assert_eq!(
            p1.segments,
            [seg(U, 0, 10, 0), seg(A, 10, 11, 0), seg(U, 11, 20, 0)]
        );
        assert!(p2.reset_context);
        assert_eq!(p2.lcp_blocks, 5);
        // Truncated to 5 blocks (still a user message), then ceil(200/64) = 4 assistant + user.
        assert_eq!(
            p2.segments,
            [seg(U, 0, 5, 0), seg(A, 5, 9, 0), seg(U, 9, 15, 7)]
        );
        for (p, r) in [(&p0, &r0), (&p1, &r1), (&p2, &r2)] {
            check_plan(p, r);
        }
        // A pull-back into the assistant region with nothing new: the last block becomes user.
        let r3 = req(640, 64, (0..5).chain(100..105).collect());
        let p3 = rc.next_turn(&r3, Some(&r2));
        assert_eq!(
            p3.segments,
            [seg(U, 0, 5, 0), seg(A, 5, 9, 0), seg(U, 9, 10, 0)]
        );
        let r4 = req(448, 64, (0..5).chain(100..102).collect());
        let p4 = rc.next_turn(&r4, Some(&r3));
        assert_eq!(
            p4.segments,
            [seg(U, 0, 5, 0), seg(A, 5, 6, 0), seg(U, 6, 7, 0)]
        );
        check_plan(&p4, &r4);
        // Truncation that removes every user message: the whole new region is user.
        let mut rc = Reconstructor::new(5, 4);
        let q0 = req(640, 500, (0..10).collect());
        let q1 = req(1280, 1, (0..2).chain(50..68).collect());
        let _ = rc.next_turn(&q0, None);
        let p = rc.next_turn(&q1, Some(&q0));
        assert_eq!(p.segments, [seg(S, 0, 2, 0), seg(U, 2, 20, 0)]);
        assert!(p.reset_context);
        // The turn index keeps counting; a fresh `None` restarts at 0.
        assert_eq!(p.turn, 1);
        assert_eq!(rc.next_turn(&q0, None).turn, 0);
    }

    #[test]
    fn render_into_matches_serde_json_bytes() {
        let c = corpus();
        for marker in [
            None,
            Some("[rid:0123456789ab]\n\n"),
            Some("\"q\" \\ \u{1} \t é ✓"),
        ] {
            for t in example_traces() {
                for (si, s) in t.streams.iter().enumerate() {
                    for (p, r) in plan_stream(&t, si).iter().zip(&s.requests) {
                        let v = render_messages(p, r, c, t.hash_scope_key(), marker);
                        let mut out = Vec::new();
                        render_messages_into(&mut out, p, r, c, t.hash_scope_key(), marker);
                        assert_eq!(
                            String::from_utf8(out).unwrap(),
                            serde_json::to_string(&v).unwrap()
                        );
                    }
                }
            }
        }
        let mut out = Vec::new();
        let all: String = (0u8..128).map(char::from).collect();
        escape_json_into(&mut out, &all);
        assert_eq!(
            format!("\"{}\"", String::from_utf8(out).unwrap()),
            serde_json::to_string(&all).unwrap()
        );
    }

    /// Re-tokenizing the rendered text (what a server does) vs the exact token-id count, o200k.
    #[test]
    fn re_encode_drift_is_small() {
        let c = corpus();
        let tok = c.tokenizer();
        let (mut exact, mut re, mut worst) = (0i64, 0i64, 0f64);
        for t in example_traces() {
            for (si, s) in t.streams.iter().enumerate() {
                for (p, r) in plan_stream(&t, si).iter().zip(&s.requests) {
                    let n: usize = contents(&render_messages(p, r, c, t.hash_scope_key(), None))
                        .iter()
                        .map(|(_, text)| tok.count(text))
                        .sum();
                    let d = (n as f64 - r.input_tokens as f64) / r.input_tokens as f64;
                    eprintln!(
                        "{} turn {}: in {} re-encoded {n} ({:+.2} %)",
                        s.id,
                        p.turn,
                        r.input_tokens,
                        100.0 * d
                    );
                    assert!(
                        d.abs() <= 0.02,
                        "{} turn {}: {n} vs {}",
                        s.id,
                        p.turn,
                        r.input_tokens
                    );
                    worst = worst.max(d.abs());
                    exact += r.input_tokens as i64;
                    re += n as i64;
                }
            }
        }
        eprintln!(
            "re-encode drift: {re} vs {exact} tokens ({:+.3} %), worst request {:.2} %",
            100.0 * (re - exact) as f64 / exact as f64,
            100.0 * worst
        );
    }

    proptest::proptest! {
        /// Random turn sequences (growing, pulled back, truncated hash lists, tiny prompts)
        /// keep every invariant: Σ tokens = in, contiguous ranges, ends with user.
        #[test]
        fn random_turns_keep_the_invariants(
            turns in proptest::collection::vec((0u32..3000, 0u32..700, 0u32..40, 0u32..3, 0u32..3), 1..12),
            sys in 0u32..6,
        ) {
            let mut rc = Reconstructor::new(3, sys);
            let mut prev: Option<TraceRequest> = None;
            let mut fresh = 1000u32;
            for (input, out, keep, mode, trunc) in turns {
                let nb = input.div_ceil(64) as usize;
                let mut ids: Vec<u32> = prev.as_ref().map(|p| p.hash_ids.clone()).unwrap_or_default();
                match mode {
                    0 => ids.truncate(keep as usize),          // pull-back
                    1 => ids.truncate(ids.len().saturating_sub(keep as usize % 4)),
                    _ => {}
                }
                while ids.len() < nb {
                    fresh += 1;
                    ids.push(fresh);
                }
                ids.truncate(nb.saturating_sub(trunc as usize * (nb / 3)));
                let r = req(input, out, ids);
                let p = rc.next_turn(&r, prev.as_ref());
                check_plan(&p, &r);
                prev = Some(r);
            }
        }
    }

    /// Body assembly speed from cached block texts (run: `cargo test --release -p
    /// inferbench-workload -- --ignored assembly_speed --nocapture`).
    #[test]
    #[ignore]
    fn assembly_speed() {
        let c = corpus();
        let r = req(100_000, 500, (0..1562).collect());
        let r0 = req(60_000, 800, (0..937).collect());
        let mut rc = Reconstructor::new(1, 0);
        let _ = rc.next_turn(&r0, None);
        let p = rc.next_turn(&r, Some(&r0));
        let mut buf = Vec::new();
        let n = 2000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            buf.clear();
            render_messages_into(&mut buf, &p, &r, c, 11, Some("[rid:0123456789ab]\n\n"));
        }
        let dt = t.elapsed().as_secs_f64();
        eprintln!(
            "render_messages_into: {:.0} M tokens/s ({} bytes per 100k-token body, {:.1} us each)",
            n as f64 * 100_000.0 / dt / 1e6,
            buf.len(),
            dt / n as f64 * 1e6
        );
        let n = 300;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(render_messages(
                &p,
                &r,
                c,
                11,
                Some("[rid:0123456789ab]\n\n"),
            ));
        }
        let dt = t.elapsed().as_secs_f64();
        eprintln!(
            "render_messages (Value): {:.0} M tokens/s",
            n as f64 * 100_000.0 / dt / 1e6
        );
        let t = std::time::Instant::now();
        let mut planned = 0u64;
        for _ in 0..10_000 {
            let mut rc = Reconstructor::new(1, 0);
            let _ = rc.next_turn(&r0, None);
            planned += rc.next_turn(&r, Some(&r0)).prompt_tokens as u64;
        }
        eprintln!(
            "planning: {:.1} us per turn of ~1.5k blocks",
            t.elapsed().as_secs_f64() / 20_000.0 * 1e6
        );
        assert!(planned > 0);
    }
}
