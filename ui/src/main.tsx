// Entry point: styles, theme before first paint, and the App.
import { render } from "preact";
import { App } from "./components/App";
import { DashboardWindow, dashboardView } from "./components/DashboardWindow";
import "./styles/base.css";
import "./styles/chat.css";
import "./styles/markdown.css";
import "./styles/wizard.css";
import "./styles/settings.css";
import "./styles/dashboard.css";
import "./styles/queue.css";
import { applyFontSize, applyTheme, loadFontSize, loadTheme } from "./theme";

applyTheme(loadTheme());
applyFontSize(loadFontSize());
const root = document.getElementById("app");
// The dashboards' own window loads the same page with ?view=memory|disk.
const view = dashboardView(location.search);
if (root) render(view ? <DashboardWindow initial={view} /> : <App />, root);
