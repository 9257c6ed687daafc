//! One module per subcommand; each owns its flags (`Args`) and a `run` returning the exit code.
pub mod bench;
pub mod changelog;
pub mod compare;
pub mod db;
pub mod ingest;
pub mod job;
pub mod matrix;
pub mod models;
pub mod plot;
pub mod quickstart;
pub mod report;
pub mod selftest;
pub mod sim;
pub mod sweep;
