//! Standard output that a closed pipe cannot turn into a panic.
//!
//! Owns: [`out!`] and [`outln!`], the CLI's only writers to stdout, and [`Json`], how a
//! typed result is written as its derived JSON. When the reader has gone (`k3 run … |
//! head -c 1`), the command stops quietly with status 0, as Unix filters do; any other
//! write error is reported on stderr with status 1.

use std::io::Write;

/// Writes `args` to stdout and flushes.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("k3: writing to standard output: {e}");
        std::process::exit(1);
    }
}

/// `print!` that stops quietly when stdout is closed.
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}

/// `println!` that stops quietly when stdout is closed.
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($t)*))) };
}

/// A typed result shown as its derived JSON, on one line (`outln!("{}", Json(&result))`).
pub struct Json<'a, T: serde::Serialize>(pub &'a T);

impl<T: serde::Serialize> std::fmt::Display for Json<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self.0).map_err(|_| std::fmt::Error)?)
    }
}
