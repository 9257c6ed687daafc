//! One module per subcommand; each owns its flags (`Args`) and a `run` returning the exit code.
pub mod bench;
pub mod selftest;
pub mod sim;
pub mod quickstart;
pub mod matrix;
pub mod changelog;
pub mod models;
pub mod sweep;
pub mod job;
pub mod ingest;
pub mod db;
pub mod report;
pub mod plot;
pub mod compare;
