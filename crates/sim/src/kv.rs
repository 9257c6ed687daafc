//! Paged KV cache: a pool of fixed-size blocks with reference counts, prefix caching on chained
//! block hashes, and LRU eviction of cached blocks nobody references (vLLM's design).
//!
//! Free blocks sit in one queue ordered by when they were freed; allocation takes from the front,
//! evicting a block's cached hash when it is reused. A prefix-cache hit on a free block takes it
//! out of the queue (O(1), intrusive doubly linked list), so recently used prefixes survive.

use std::collections::HashMap;

const NIL: u32 = u32::MAX;

/// The block pool. Block ids are `0 .. num_blocks`.
#[derive(Debug)]
pub struct BlockPool {
    ref_cnt: Vec<u32>,
    hash: Vec<u64>, // 0 = not cached
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    num_free: u32,
    cached: HashMap<u64, u32>,
    evictions: u64,
}

impl BlockPool {
    /// A pool of `num_blocks` free, uncached blocks.
    pub fn new(num_blocks: u32) -> Self {
        let n = num_blocks as usize;
        let mut p = BlockPool {
            ref_cnt: vec![0; n],
            hash: vec![0; n],
            prev: vec![NIL; n],
            next: vec![NIL; n],
            head: NIL,
            tail: NIL,
            num_free: 0,
            cached: HashMap::new(),
            evictions: 0,
        };
        for b in 0..num_blocks {
            p.push_tail(b);
        }
        p
    }

    /// Total blocks.
    pub fn num_blocks(&self) -> u32 {
        self.ref_cnt.len() as u32
    }

    /// Blocks with no reference (allocatable; some may still hold a cached prefix).
    pub fn num_free(&self) -> u32 {
        self.num_free
    }

    /// Blocks referenced by at least one sequence.
    pub fn num_used(&self) -> u32 {
        self.num_blocks() - self.num_free
    }

    /// Cached blocks evicted so far (a cached hash dropped to reuse its block).
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Fraction of blocks in use, 0..=1 (`vllm:kv_cache_usage_perc`).
    pub fn usage(&self) -> f64 {
        if self.ref_cnt.is_empty() {
            0.0
        } else {
            f64::from(self.num_used()) / self.ref_cnt.len() as f64
        }
    }

    fn push_tail(&mut self, b: u32) {
        let i = b as usize;
        self.prev[i] = self.tail;
        self.next[i] = NIL;
        if self.tail == NIL {
            self.head = b;
        } else {
            self.next[self.tail as usize] = b;
        }
        self.tail = b;
        self.num_free += 1;
    }

    fn unlink(&mut self, b: u32) {
        let i = b as usize;
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[i] = NIL;
        self.next[i] = NIL;
        self.num_free -= 1;
    }

    /// How many leading hashes of `hashes` are cached (without touching anything).
    pub fn count_hits(&self, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .take_while(|h| self.cached.contains_key(h))
            .count()
    }

    /// Takes a reference on the cached blocks of the leading hashes of `hashes` (at most
    /// `max_blocks`) and returns them, in order.
    pub fn acquire_hits(&mut self, hashes: &[u64], max_blocks: usize) -> Vec<u32> {
        let mut out = Vec::new();
        for h in hashes.iter().take(max_blocks) {
            let Some(&b) = self.cached.get(h) else { break };
            if self.ref_cnt[b as usize] == 0 {
                self.unlink(b);
            }
            self.ref_cnt[b as usize] += 1;
            out.push(b);
        }
        out
    }

    /// Allocates `n` fresh blocks (evicting cached ones from the LRU front), or `None` when fewer
    /// than `n` are free (nothing is changed then).
    pub fn allocate(&mut self, n: u32) -> Option<Vec<u32>> {
        if n > self.num_free {
            return None;
        }
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let b = self.head;
            self.unlink(b);
            let h = std::mem::take(&mut self.hash[b as usize]);
            if h != 0 {
                if self.cached.get(&h) == Some(&b) {
                    self.cached.remove(&h);
                }
                self.evictions += 1;
            }
            self.ref_cnt[b as usize] = 1;
            out.push(b);
        }
        Some(out)
    }

    /// Records that full block `b` holds the prefix with hash `h`, so later requests can hit it.
    /// If another block already caches `h`, `b` stays uncached (a duplicate).
    pub fn set_hash(&mut self, b: u32, h: u64) {
        if h == 0 || self.hash[b as usize] != 0 {
            return;
        }
        if let std::collections::hash_map::Entry::Vacant(e) = self.cached.entry(h) {
            e.insert(b);
            self.hash[b as usize] = h;
        }
    }

    /// Drops one reference on each of `blocks`. Blocks reaching zero join the free queue, the
    /// last block first, so a sequence's tail is evicted before its (more shareable) head.
    pub fn release(&mut self, blocks: &[u32]) {
        for &b in blocks.iter().rev() {
            let r = &mut self.ref_cnt[b as usize];
            debug_assert!(*r > 0, "double free of block {b}");
            if *r == 0 {
                continue;
            }
            *r -= 1;
            if *r == 0 {
                self.push_tail(b);
            }
        }
    }

    /// Drops every cached hash (`/reset_prefix_cache`).
    pub fn reset_prefix_cache(&mut self) {
        self.cached.clear();
        for h in &mut self.hash {
            *h = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_oldest_freed_cached_block_first() {
        let mut p = BlockPool::new(4);
        let a = p.allocate(2).unwrap();
        p.set_hash(a[0], 11);
        p.set_hash(a[1], 12);
        let b = p.allocate(2).unwrap();
        p.set_hash(b[0], 21);
        assert_eq!(p.num_free(), 0);
        assert!(p.allocate(1).is_none());
        p.release(&a); // frees a[1] then a[0]
        p.release(&b); // frees b[1] then b[0]
        assert_eq!(p.num_free(), 4);
        // A hit on 11 revives a[0] out of the queue.
        assert_eq!(p.acquire_hits(&[11, 12, 99], 8), vec![a[0], a[1]]);
        assert_eq!(p.num_free(), 2);
        // Next allocation evicts the oldest free: b[1] (uncached) then b[0] (hash 21).
        let c = p.allocate(2).unwrap();
        assert_eq!(c, vec![b[1], b[0]]);
        assert_eq!(p.evictions(), 1);
        assert_eq!(p.count_hits(&[21]), 0);
        assert_eq!(p.count_hits(&[11, 12]), 2);
    }
}
