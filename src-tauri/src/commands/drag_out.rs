//! Results dragged out of the window: named copies of the items (the store holds them under
//! hashes) offered as `text/uri-list` by a GTK drag from the app's window, which the pointer
//! already holds, so a file manager, a DAW or a chat window can take them.

use crate::error::CommandResult;
use crate::state::AppState;
use anyhow::{Context, anyhow};
use std::path::PathBuf;
use std::sync::Arc;
use tauri::{State, WebviewWindow};
use timbre_core::library_export::{self, LibraryItem};

/// Starts a drag of `items` from `window` while the mouse button that began it is still down;
/// the copies offered.
#[tauri::command]
pub async fn start_drag_out(
    window: WebviewWindow,
    state: State<'_, AppState>,
    items: Vec<LibraryItem>,
) -> CommandResult<Vec<PathBuf>> {
    let jobs = Arc::clone(&state.jobs);
    let copies = tauri::async_runtime::spawn_blocking(move || {
        library_export::drag_copies(jobs.library(), &items)
    })
    .await??;
    let offered = copies.clone();
    let (began, result) = std::sync::mpsc::channel();
    let source = window.clone();
    window.run_on_main_thread(move || {
        let _ = began.send(begin_drag(&source, offered));
    })?;
    result
        .recv()
        .context("the window closed before the drag began")??;
    Ok(copies)
}

#[cfg(target_os = "linux")]
fn begin_drag(window: &WebviewWindow, files: Vec<PathBuf>) -> anyhow::Result<()> {
    use gtk::prelude::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    let uris = files
        .iter()
        .map(|file| gtk::glib::filename_to_uri(file, None).map(|uri| uri.to_string()))
        .collect::<Result<Vec<_>, _>>()
        .context("a copy has no file URI")?;
    let source = window.gtk_window()?;
    // Meant for other programs. A drop back on this window still reaches its webview, which
    // ignores its own copies (`foreignPaths` in ui/src/lib/dragOut.ts).
    let targets = gtk::TargetList::new(&[gtk::TargetEntry::new(
        "text/uri-list",
        gtk::TargetFlags::OTHER_APP,
        0,
    )]);
    let data = source.connect_drag_data_get(move |_, _, selection, _, _| {
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        selection.set_uris(&uris);
    });
    let handlers = Rc::new(RefCell::new(Some(data)));
    let end = Rc::new(RefCell::new(None));
    let end_handler = source.connect_drag_end({
        let (handlers, end) = (Rc::clone(&handlers), Rc::clone(&end));
        move |source, _| {
            // One drag's handlers: the next drag offers its own files.
            for handler in [handlers.take(), end.take()].into_iter().flatten() {
                source.disconnect(handler);
            }
        }
    });
    end.replace(Some(end_handler));
    let context =
        source.drag_begin_with_coordinates(&targets, gtk::gdk::DragAction::COPY, 1, None, -1, -1);
    if context.is_none() {
        return Err(anyhow!("the window could not start a drag"));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn begin_drag(_window: &WebviewWindow, _files: Vec<PathBuf>) -> anyhow::Result<()> {
    Err(anyhow!(
        "dragging out of the window needs Linux for now; use Export…"
    ))
}
