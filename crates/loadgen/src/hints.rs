//! What to tell a user whose run the server refused outright: `--base-url` ending in `/v1`
//! (the endpoint already starts with `/v1/`), caught before any request (HTTP 404 answers are
//! explained by [`inferbench_client::models`]); and the model a run without `--model` sends
//! (the server's first).

pub use inferbench_client::models::doubled_v1;
/// The model a run without `--model` sends, and the line naming it: the client crate's
/// (shared with `eval`).
pub use inferbench_client::models::{served_model, served_model_note};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_v1_is_caught_with_the_fix() {
        assert_eq!(
            doubled_v1("http://h:8000/v1", "/v1/completions").as_deref(),
            Some(
                "should not end in /v1: the endpoint /v1/completions is appended (requests \
                 would go to http://h:8000/v1/v1/completions); use --base-url http://h:8000"
            )
        );
        assert!(doubled_v1("http://h:8000/v1/", "v1/chat/completions").is_some());
        assert_eq!(doubled_v1("http://h:8000", "/v1/completions"), None);
        // A base under /v1 with an endpoint below it is what the user asked for.
        assert_eq!(doubled_v1("http://h:8000/v1", "/completions"), None);
        assert_eq!(doubled_v1("http://h:8000/api/v10", "/v1/completions"), None);
    }
}
