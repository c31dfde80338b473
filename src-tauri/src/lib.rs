//! k3-desktop: the Tauri v2 shell over k3-engine.
//!
//! Bird's-eye view: `run()` builds the app: the history store and the engine worker
//! (`AppState`), the log, dialog, opener and notification plugins, and the commands in `commands/`. Long work (model
//! loads, generations) runs on the worker thread; generations stream typed events over a
//! `tauri::ipc::Channel`. The UI (`ui/`) is built to `ui/dist` and embedded at compile time.
//! Invariants: this is the only crate that knows Tauri, SQLite and wire JSON; commands
//! are thin; every command is in `command_names.rs`, `generate_handler!` below and
//! `capabilities/default.json` (checked by `tests/integration/contract.rs`).
pub mod awake;
pub mod commands;
pub mod ipc;
pub mod logging;
pub mod queue_host;
pub mod state;

include!("command_names.rs");

use tauri::Manager;

/// Registers every command (the lockstep test invokes each name through this).
pub fn with_commands<R: tauri::Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    use commands::{
        backends::*, conversations::*, dashboard::*, generate::*, links::*, local_api::*, memory::*, model::*,
        queue::*, settings::*, setup::*, tools::*,
    };
    builder.invoke_handler(tauri::generate_handler![
        current_model,
        open_model,
        pick_model_folder,
        model_folder,
        verify_model_folder,
        stop_verify,
        open_link,
        history_notice,
        list_conversations,
        create_conversation,
        chat_defaults,
        set_chat_defaults,
        get_conversation,
        update_conversation,
        delete_conversation,
        export_conversation,
        save_export,
        send_message,
        regenerate,
        edit_message,
        cancel_generation,
        setup_status,
        setup_examine,
        setup_choose,
        setup_next,
        setup_speed_test,
        setup_forecast,
        setup_run,
        setup_pause,
        setup_adopt,
        setup_dismiss,
        setup_token,
        api_status,
        api_start,
        api_stop,
        list_backends,
        add_backend,
        remove_backend,
        test_backend,
        list_remote_models,
        set_conversation_backend,
        dashboard,
        disk_usage,
        diagnostics,
        open_dashboard_window,
        memory_settings,
        plan_preview,
        memory_what_if,
        apply_memory,
        performance_settings,
        apply_performance,
        set_speculation,
        set_resume,
        read_log,
        queue_state,
        queue_add,
        queue_pause,
        queue_resume,
        queue_cancel,
        queue_cancel_all,
        queue_clear_finished,
        queue_export,
        queue_save_export,
        continue_reply,
        tool_servers,
        save_tool_server,
        remove_tool_server,
        list_server_tools,
        revoke_tool_permission,
        pending_tool_calls,
        decide_tool_call,
        stop_tool_call,
    ])
}

/// Starts the app; returns when the last window closes.
pub fn run() {
    let options = k3_app::options::AppOptions::from_env();
    let builder = tauri::Builder::default()
        .plugin(logging::plugin(options.data_dir.as_deref()))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_notification::init())
        .setup(move |app| {
            let data_dir = match &options.data_dir {
                Some(d) => d.clone(),
                None => app.path().app_data_dir()?,
            };
            let resources = app.path().resource_dir().ok();
            let mut state = state::AppState::start(&options, &data_dir, resources.as_deref())?;
            if state.log_file.is_none() {
                state.log_file = logging::log_file(None, app.path().app_log_dir().ok());
            }
            log::info!("k3-desktop {} started; data in {}", env!("CARGO_PKG_VERSION"), data_dir.display());
            let handle = app.handle().clone();
            state.queue.set_notifier(Box::new(move |title, body| awake::notify(&handle, title, body)));
            app.manage(state);
            Ok(())
        });
    let app = match with_commands(builder).build(tauri::generate_context!()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("k3-desktop: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| {
        if let tauri::RunEvent::Exit = event {
            // Close the local API's connections (cancelling their generations) before the
            // process ends; its saved on/off choice stays for the next start.
            if let Some(state) = app.try_state::<state::AppState>() {
                state.local_api.shutdown();
            }
        }
    });
}
