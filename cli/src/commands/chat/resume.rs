//! `k3 chat --resume FILE`: the conversation a state file holds, continued; a file that
//! cannot be read is kept aside (never overwritten) and its text recovered when it can be.

use super::conversation::Conversation;

/// The conversation `--resume FILE` holds (its system prompt and mode replace the flags'),
/// or a new one when the file does not exist yet. A file that cannot be read is never
/// overwritten: it is kept aside as `FILE.damaged` (probe finding: the next message replaced
/// six saved messages), and the conversation continues from its text when its header holds.
pub(super) fn resumed_conversation(conversation: &mut Conversation) {
    let Some(path) = conversation.state_file.clone().filter(|p| p.exists()) else { return };
    let saved = match k3_engine::chat::read_saved_conversation(&path) {
        Ok(saved) => {
            outln!("(continuing the {} messages saved in {})", saved.messages.len(), path.display());
            saved
        }
        Err(e) => {
            let recovered = k3_engine::chat::recover_saved_conversation(&path);
            let aside = set_aside(&path);
            match (recovered, aside) {
                (Ok(saved), Ok(kept)) => {
                    outln!(
                        "({e}; kept as {}; continuing its {} messages from their text, read again from the start)",
                        kept.display(),
                        saved.messages.len()
                    );
                    saved
                }
                (Err(_), Ok(kept)) => {
                    outln!(
                        "({e}; kept as {}; starting a new conversation, saved in {})",
                        kept.display(),
                        path.display()
                    );
                    return;
                }
                (_, Err(why)) => {
                    outln!("({e}; it could not be kept aside ({why}), so this conversation is not saved)");
                    conversation.state_file = None;
                    return;
                }
            }
        }
    };
    conversation.system = saved.system;
    conversation.mode = saved.mode;
    conversation.messages = saved.messages;
}

/// Keeps a damaged state file as the first free `FILE.damaged`, `FILE.damaged.2`, …: moved,
/// or copied when FILE is a symbolic link (which stays, and is written through later).
fn set_aside(path: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let name = |n: u32| {
        let suffix = if n == 1 { ".damaged".to_string() } else { format!(".damaged.{n}") };
        let mut os = path.as_os_str().to_owned();
        os.push(suffix);
        std::path::PathBuf::from(os)
    };
    let free =
        (1..1000).map(name).find(|p| !p.exists()).ok_or_else(|| std::io::Error::other("too many kept copies"))?;
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        std::fs::copy(path, &free)?;
    } else {
        std::fs::rename(path, &free)?;
    }
    Ok(free)
}
