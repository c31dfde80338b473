//! The chat history (`k3_app::history`) on real SQLite files: one test binary, each file a
//! module (`history_crash` is a binary of its own: its SIGKILL campaign times its child
//! processes' starts).

mod corrupt;
mod store;
