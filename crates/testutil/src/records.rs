//! Request records built from explicit times, for tests of what is computed from them.

use inferbench_core::{Channel, ChunkRecord, Phase, RequestRecord};

/// A successful profile-phase record: request `id` sent (and scheduled) at `sent_ns`, one
/// content token per chunk at each of `chunks_ns` (ns on the run clock; also its first byte),
/// ending at the last chunk (at `sent_ns` without chunks); 10 prompt tokens; output text one `x`
/// per token. Tests adjust the rest with struct update syntax.
pub fn streamed(id: u64, sent_ns: u64, chunks_ns: &[u64]) -> RequestRecord {
    RequestRecord {
        request_id: id,
        phase: Phase::Profile,
        success: true,
        scheduled_ns: sent_ns,
        sent_ns,
        first_byte_ns: chunks_ns.first().copied(),
        first_token_ns: chunks_ns.first().copied(),
        first_output_token_ns: chunks_ns.first().copied(),
        last_token_ns: chunks_ns.last().copied(),
        end_ns: chunks_ns.last().copied().unwrap_or(sent_ns),
        prompt_tokens: 10,
        prompt_tokens_client: 10,
        completion_tokens: u32::try_from(chunks_ns.len()).unwrap_or(u32::MAX),
        output_text: "x".repeat(chunks_ns.len()),
        chunks: chunks_ns
            .iter()
            .map(|&t| ChunkRecord {
                t_ns: t,
                channel: Channel::Content,
                tokens: None,
            })
            .collect(),
        ..RequestRecord::default()
    }
}
