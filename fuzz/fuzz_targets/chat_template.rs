//! A hostile `chat_template` rendered as the engine renders it (`ChatTemplate::jinja`,
//! minijinja with fuel, a recursion limit and an output cap — RELIABILITY CF-08).
//!
//! Input: sections: the template, then the messages (split at 0x01; roles cycle system,
//! user, assistant; an assistant message's think text follows a 0x02), then one mode byte
//! (odd: thinking; bit 1: add the generation prompt).
//! Invariants: rendering ends (libFuzzer's -timeout bounds it) within the memory limit,
//! and a rendered text is at most the cap (1 MiB in the fuzz build, 16 MiB otherwise); the built-in renderer's text for the same
//! messages is append-only (one more message extends it).
#![no_main]

use k3_engine::chat::{ChatMessage, ChatMode, ChatTemplate, Role};
use k3_fuzz::sections;
use libfuzzer_sys::fuzz_target;

/// The engine's cap on a rendered conversation in the fuzz build
/// (`chat::template::MAX_RENDERED_BYTES` under `cfg(fuzzing)`: 1 MiB, and the fuel 200,000
/// steps, where a release build allows 16 MiB and 2,000,000 — reached and refused the same
/// way, a tenth of the time per runaway input).
const MAX_RENDERED_BYTES: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let parts = sections(data);
    let Some(source) = parts.first().and_then(|s| std::str::from_utf8(s).ok()) else { return };
    let text = String::from_utf8_lossy(parts.get(1).copied().unwrap_or_default());
    let flags = parts.get(2).and_then(|f| f.first()).copied().unwrap_or(0);
    let mode = if flags & 1 != 0 { ChatMode::Thinking } else { ChatMode::Instruct };
    let prompt = flags & 2 != 0;
    let roles = [Role::System, Role::User, Role::Assistant];
    let messages: Vec<ChatMessage> = text
        .split('\u{1}')
        .enumerate()
        .map(|(i, m)| {
            let role = roles[i % 3];
            match m.split_once('\u{2}') {
                Some((content, think)) if role == Role::Assistant => {
                    ChatMessage { think: Some(think.to_string()), ..ChatMessage::new(role, content) }
                }
                _ => ChatMessage::new(role, m),
            }
        })
        .collect();

    if let Ok(rendered) = ChatTemplate::jinja(source).render(&messages, mode, prompt) {
        assert!(rendered.len() <= MAX_RENDERED_BYTES, "rendered {} bytes", rendered.len());
    }

    let builtin = ChatTemplate::builtin();
    let whole = builtin.render(&messages, mode, false).expect("the built-in renderer renders");
    let shorter = builtin.render(&messages[..messages.len() - 1], mode, false).expect("renders");
    assert!(whole.starts_with(&shorter), "the built-in template is not append-only");
});
