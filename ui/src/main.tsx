// Entry point: styles, theme before first paint, and the App.
import { render } from "preact";
import { App } from "./components/App";
import "./styles/base.css";
import "./styles/chat.css";
import "./styles/markdown.css";
import "./styles/wizard.css";
import "./styles/settings.css";
import { applyTheme, loadTheme } from "./theme";

applyTheme(loadTheme());
const root = document.getElementById("app");
if (root) render(<App />, root);
