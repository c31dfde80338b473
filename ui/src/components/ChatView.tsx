// The open conversation: its messages, the live reply, the tool calls waiting for the user, and
// scrolling that follows the reply while the reader stays at the bottom.
// Must not: decide which messages exist (state/chat.ts `shownMessages`, `liveStream` do).
import { useEffect, useMemo, useRef } from "preact/hooks";
import { type ChatState, liveStream, shownMessages } from "../state/chat";
import type { ChatActions } from "../controllers/chat";
import { isRunning } from "../state/stream";
import { useToolLoop } from "../controllers/toolLoop";
import { type MessageActions, MessageView } from "./MessageView";
import { StreamingMessage } from "./StreamingMessage";
import { ToolCalls } from "./ToolCalls";

interface Props {
  state: ChatState;
  actions: ChatActions;
}

export function ChatView({ state, actions }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const shown = shownMessages(state);
  const live = liveStream(state);
  const busy = isRunning(state.stream);
  const last = shown[shown.length - 1];
  const lastAssistantId = last && last.saved && last.message.role === "assistant" ? last.message.id : null;
  const loop = useToolLoop(state, actions);

  const messageActions = useMemo<MessageActions>(
    () => ({
      onRegenerate: () => void actions.regenerate(),
      onEdit: (id) => actions.startEdit(id),
      onSaveEdit: (id, text) => void actions.resend(id, text),
      onCancelEdit: () => actions.cancelEdit(),
    }),
    [actions],
  );

  const autoTop = useRef(0);
  useEffect(() => {
    const el = scroller.current;
    if (!el || !stick.current) return;
    el.scrollTop = el.scrollHeight;
    autoTop.current = el.scrollTop;
  }, [live?.text, shown.length, state.current?.id, loop.pending.length, loop.running]);

  // Scroll events arrive a frame late, after more text may have landed: only a move *up* from where
  // we last scrolled means the reader left the bottom.
  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    if (el.scrollHeight - el.scrollTop - el.clientHeight < 48) stick.current = true;
    else if (el.scrollTop < autoTop.current - 4) stick.current = false;
  };

  return (
    <div class="messages" ref={scroller} onScroll={onScroll}>
      {shown.length === 0 && !live && (
        <p class="empty">{state.current ? "No messages yet. Say something below." : "Start a new chat below."}</p>
      )}
      {shown.map(({ message, saved }) => (
        <MessageView
          key={saved ? message.id : `pending-${message.id}`}
          message={message}
          saved={saved}
          canRegenerate={!busy && message.id === lastAssistantId}
          canEdit={!busy && saved && message.role === "user"}
          editing={state.editingId === message.id}
          actions={messageActions}
        />
      ))}
      {live && <StreamingMessage stream={live} />}
      <ToolCalls loop={loop} />
    </div>
  );
}
