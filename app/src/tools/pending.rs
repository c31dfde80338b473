//! Which tool calls of a conversation still wait for an answer: the calls of its last
//! assistant message that no tool message after it answers. Read from the history, so
//! the loop picks up where it was after a restart.

/// One call of the last assistant message, as the history keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCall {
    pub message_id: i64,
    pub call_id: String,
    pub tool: String,
    pub index: u32,
    pub arguments: String,
}

/// A message as far as the loop cares: an assistant's calls (id, tool, index, arguments)
/// or the call id a tool message answers.
pub enum LoopMessage<'a> {
    Assistant { id: i64, calls: Vec<(&'a str, &'a str, u32, &'a str)> },
    ToolResult { call_id: &'a str },
    Other,
}

/// The calls of the last assistant message not answered after it, in order; empty when
/// a user message came after it or it made no call.
pub fn pending_calls<'a>(messages: impl DoubleEndedIterator<Item = LoopMessage<'a>>) -> Vec<PendingCall> {
    let mut answered = Vec::new();
    for message in messages.rev() {
        match message {
            LoopMessage::ToolResult { call_id } => answered.push(call_id),
            LoopMessage::Other => return Vec::new(),
            LoopMessage::Assistant { id, calls } => {
                return calls
                    .into_iter()
                    .filter(|(call_id, ..)| !answered.contains(call_id))
                    .map(|(call_id, tool, index, arguments)| PendingCall {
                        message_id: id,
                        call_id: call_id.to_string(),
                        tool: tool.to_string(),
                        index,
                        arguments: arguments.to_string(),
                    })
                    .collect();
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(id: i64) -> LoopMessage<'static> {
        LoopMessage::Assistant { id, calls: vec![("c1", "read", 1, "{}"), ("c2", "list", 2, "{}")] }
    }

    #[test]
    fn the_last_replys_unanswered_calls_wait_and_nothing_waits_after_a_user_message() {
        let waiting =
            pending_calls([LoopMessage::Other, asked(7), LoopMessage::ToolResult { call_id: "c1" }].into_iter());
        assert_eq!(waiting.len(), 1);
        assert_eq!((waiting[0].message_id, waiting[0].call_id.as_str(), waiting[0].index), (7, "c2", 2));
        assert_eq!(pending_calls([asked(7)].into_iter()).len(), 2);
        assert!(pending_calls([asked(7), LoopMessage::Other].into_iter()).is_empty());
        let answered = [asked(7), LoopMessage::ToolResult { call_id: "c2" }, LoopMessage::ToolResult { call_id: "c1" }];
        assert!(pending_calls(answered.into_iter()).is_empty());
        assert!(pending_calls(std::iter::empty()).is_empty());
    }
}
