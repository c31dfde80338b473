//! The k3-desktop executable: all behaviour lives in the library (`k3_desktop::run`).
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    k3_desktop::run()
}
