// The read-only page of a share link: Copy on messages and code blocks, highlighted code.
// Nothing here acts on the conversation (the page renders no Edit, Regenerate, version or
// approval buttons), so every command is refused.
import { installMessageActions } from "./messages.js";

const messages = document.querySelector(".shared-messages");
if (messages) installMessageActions(messages, () => false);
