//! The server's loop: the handshake, the open documents, diagnostics published after each burst
//! of edits, and one answer per request.

use crate::document::Document;
use crate::workspace::{Checked, Workspace};
use crate::{CatalogueLoader, actions, complete, convert, navigate, outline, uri};
use crossbeam_channel::{Receiver, Sender, select, unbounded};
use loam_compiler::project::{CheckedProject, plan_project};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::plan::Plan;
use loam_ir::span::FileId;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{
    CodeActionRequest, Completion, DocumentSymbolRequest, FoldingRangeRequest, Formatting,
    GotoDefinition, HoverRequest, Request as _,
};
use lsp_types::{
    CodeActionParams, CodeActionProviderCapability, CompletionOptions, CompletionParams,
    CompletionResponse, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DocumentFormattingParams, DocumentSymbolParams,
    DocumentSymbolResponse, FoldingRangeParams, FoldingRangeProviderCapability,
    GotoDefinitionParams, GotoDefinitionResponse, HoverParams, HoverProviderCapability,
    InitializeParams, MessageType, OneOf, PublishDiagnosticsParams, ServerCapabilities, ServerInfo,
    ShowMessageParams, TextDocumentSyncCapability, TextDocumentSyncKind, TextEdit, Uri,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the server waits after an edit for the next one before it checks: a burst of
/// keystrokes (or a client that sends each change as its own message) is checked once.
/// Chosen: well under the 50 ms the issue allows a keystroke's diagnostics, above the gap
/// between the messages of one paste or one multi-cursor edit.
const DEBOUNCE: Duration = Duration::from_millis(15);

/// One open document and what was last published for it.
struct Open {
    uri: Uri,
    /// The name diagnostics and plans give it: its path below the workspace root, as `loam
    /// check` run there would.
    name: String,
    doc: Document,
    /// The diagnostics last published, each with the compiler's own (for quick fixes).
    published: Vec<(Diagnostic, lsp_types::Diagnostic)>,
    /// The plans of this version's jobs, once the background planner made them.
    plans: Vec<Plan>,
}

struct Server {
    workspace: Workspace,
    /// Open documents by URI.
    open: BTreeMap<String, Open>,
    /// Documents edited since their diagnostics were last published.
    dirty: BTreeSet<String>,
    /// The plan running in the background: its thread, and where its result arrives.
    planning: Option<JoinHandle<()>>,
    /// The next document version to plan once the running plan ends: the latest one checked
    /// clean (an older one is replaced, so a burst of edits plans once).
    queued: Option<PlanJob>,
    plans: (Sender<Planned>, Receiver<Planned>),
}

/// A document version to plan: the project it was checked in.
struct PlanJob {
    key: String,
    version: i32,
    project: CheckedProject,
    file: FileId,
}

/// The planner's findings (L3xxx) and plans for one document version.
struct Planned {
    key: String,
    version: i32,
    findings: Checked,
    plans: Vec<Plan>,
}

/// The capabilities loam's server offers.
fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(
            TextDocumentSyncKind::INCREMENTAL,
        )),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["\"".into(), "[".into(), ",".into(), "=".into()]),
            ..CompletionOptions::default()
        }),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        ..ServerCapabilities::default()
    }
}

/// The folder the editor opened: its first workspace folder, else its root URI.
#[allow(deprecated)] // `root_uri` is how clients without workspace folders name the root.
fn root_of(params: &InitializeParams) -> Option<PathBuf> {
    params
        .workspace_folders
        .as_ref()
        .and_then(|folders| folders.first())
        .map(|f| &f.uri)
        .or(params.root_uri.as_ref())
        .and_then(uri::to_path)
}

/// Answers the handshake, then serves `connection` until the client shuts down.
pub fn serve(connection: &Connection, loader: &CatalogueLoader<'_>) -> Result<(), String> {
    let (id, params) = connection.initialize_start().map_err(|e| e.to_string())?;
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let root = root_of(&params);
    let result = serde_json::json!({
        "capabilities": capabilities(),
        "serverInfo": ServerInfo {
            name: "loam".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        },
    });
    connection
        .initialize_finish(id, result)
        .map_err(|e| e.to_string())?;
    let files = match loader(root.as_deref()) {
        Ok(files) => files,
        Err(message) => {
            notify::<ShowMessage>(
                connection,
                ShowMessageParams {
                    typ: MessageType::ERROR,
                    message: format!("loam: {message}; checking against the built-in catalogue"),
                },
            )?;
            loam_compiler::catalogue::builtin_sources()
                .into_iter()
                .map(|(path, text)| (path.to_string(), text.to_string()))
                .collect()
        }
    };
    let mut server = Server {
        workspace: Workspace::new(root, files),
        open: BTreeMap::new(),
        dirty: BTreeSet::new(),
        planning: None,
        queued: None,
        plans: unbounded(),
    };
    server.run(connection)
}

fn notify<N: lsp_types::notification::Notification>(
    connection: &Connection,
    params: N::Params,
) -> Result<(), String> {
    connection
        .sender
        .send(Message::Notification(Notification::new(
            N::METHOD.to_string(),
            params,
        )))
        .map_err(|e| e.to_string())
}

impl Server {
    fn run(&mut self, connection: &Connection) -> Result<(), String> {
        let plans = self.plans.1.clone();
        loop {
            // A planner thread that ended without a result (it panicked) frees the slot.
            if self.planning.as_ref().is_some_and(JoinHandle::is_finished) {
                self.planning = None;
                self.start_planning();
            }
            let wait = if self.dirty.is_empty() {
                Duration::from_secs(3600)
            } else {
                DEBOUNCE
            };
            let message = select! {
                recv(connection.receiver) -> message => match message {
                    Ok(message) => message,
                    Err(_) => return Ok(()),
                },
                recv(plans) -> planned => {
                    if let Ok(planned) = planned {
                        self.planned(connection, planned)?;
                    }
                    continue;
                },
                default(wait) => {
                    self.publish(connection)?;
                    continue;
                },
            };
            match message {
                Message::Request(request) => {
                    if connection
                        .handle_shutdown(&request)
                        .map_err(|e| e.to_string())?
                    {
                        return Ok(());
                    }
                    // A request sees the diagnostics of the text it is about.
                    self.publish(connection)?;
                    let response = self.answer(request);
                    connection
                        .sender
                        .send(Message::Response(response))
                        .map_err(|e| e.to_string())?;
                }
                Message::Notification(notification) => {
                    if notification.method == "exit" {
                        return Ok(());
                    }
                    self.notice(connection, notification)?;
                }
                Message::Response(_) => {}
            }
        }
    }

    /// Checks every edited document and publishes its diagnostics.
    fn publish(&mut self, connection: &Connection) -> Result<(), String> {
        for key in std::mem::take(&mut self.dirty) {
            let Some(open) = self.open.get_mut(&key) else {
                continue;
            };
            let checked = self.workspace.check(&open.name, &open.doc.text);
            let shown = convert::diagnostics(&checked, &open.doc, &open.uri);
            // A document whose jobs check clean is planned in the background; its findings
            // follow its diagnostics when the plan is done.
            let clean = !checked.diagnostics.iter().any(Diagnostic::is_error);
            if clean && checked.project.plannable().next().is_some() {
                self.queued = Some(PlanJob {
                    key: key.clone(),
                    version: open.doc.version,
                    project: checked.project,
                    file: checked.file,
                });
            }
            open.published = checked.diagnostics.into_iter().zip(shown).collect();
            notify::<PublishDiagnostics>(
                connection,
                PublishDiagnosticsParams {
                    uri: open.uri.clone(),
                    diagnostics: open.published.iter().map(|(_, d)| d.clone()).collect(),
                    version: Some(open.doc.version),
                },
            )?;
        }
        self.start_planning();
        Ok(())
    }

    /// Starts planning the queued document version, unless a plan is running (the queue keeps
    /// the newest version; an edited document's older version is not planned).
    fn start_planning(&mut self) {
        if self.planning.is_some() {
            return;
        }
        let Some(job) = self.queued.take() else {
            return;
        };
        let current = self.open.get(&job.key).map(|o| o.doc.version);
        if current != Some(job.version) {
            return;
        }
        let sender = self.plans.0.clone();
        self.planning = Some(std::thread::spawn(move || {
            let planned = plan_project(&job.project, 1);
            let findings = Checked {
                diagnostics: planned.findings,
                sources: job.project.sources.clone(),
                file: job.file,
                project: job.project,
            };
            let _ = sender.send(Planned {
                key: job.key,
                version: job.version,
                findings,
                plans: planned.document.plans,
            });
        }));
    }

    /// Publishes a plan's findings after the document's diagnostics, when the document is still
    /// at the version planned (a newer edit cancels them), then plans what is queued.
    fn planned(&mut self, connection: &Connection, planned: Planned) -> Result<(), String> {
        if let Some(handle) = self.planning.take() {
            let _ = handle.join();
        }
        if let Some(open) = self.open.get_mut(&planned.key)
            && open.doc.version == planned.version
            && !self.dirty.contains(&planned.key)
        {
            open.plans = planned.plans;
        }
        if let Some(open) = self.open.get_mut(&planned.key)
            && open.doc.version == planned.version
            && !self.dirty.contains(&planned.key)
            && !planned.findings.diagnostics.is_empty()
        {
            let shown = convert::diagnostics(&planned.findings, &open.doc, &open.uri);
            open.published
                .extend(planned.findings.diagnostics.into_iter().zip(shown));
            notify::<PublishDiagnostics>(
                connection,
                PublishDiagnosticsParams {
                    uri: open.uri.clone(),
                    diagnostics: open.published.iter().map(|(_, d)| d.clone()).collect(),
                    version: Some(open.doc.version),
                },
            )?;
        }
        self.start_planning();
        Ok(())
    }

    fn notice(&mut self, connection: &Connection, n: Notification) -> Result<(), String> {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) else {
                    return Ok(());
                };
                let key = p.text_document.uri.as_str().to_string();
                let name = self.name_of(&p.text_document.uri);
                self.open.insert(
                    key.clone(),
                    Open {
                        uri: p.text_document.uri,
                        name,
                        doc: Document::new(p.text_document.text, p.text_document.version),
                        published: Vec::new(),
                        plans: Vec::new(),
                    },
                );
                self.dirty.insert(key);
            }
            DidChangeTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params) else {
                    return Ok(());
                };
                let key = p.text_document.uri.as_str().to_string();
                if let Some(open) = self.open.get_mut(&key) {
                    open.doc.apply(p.content_changes, p.text_document.version);
                    // The plans were of the text before; they return with the next plan.
                    open.plans.clear();
                    self.dirty.insert(key);
                }
            }
            DidCloseTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) else {
                    return Ok(());
                };
                let key = p.text_document.uri.as_str().to_string();
                self.open.remove(&key);
                self.dirty.remove(&key);
                // A closed document's diagnostics leave the editor's list with it.
                notify::<PublishDiagnostics>(
                    connection,
                    PublishDiagnosticsParams {
                        uri: p.text_document.uri,
                        diagnostics: Vec::new(),
                        version: None,
                    },
                )?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The name of a document: its path below the workspace root, else its path, else its URI.
    fn name_of(&self, uri: &Uri) -> String {
        let Some(path) = uri::to_path(uri) else {
            return uri.as_str().to_string();
        };
        let relative = self
            .workspace
            .root
            .as_ref()
            .and_then(|root| path.strip_prefix(root).ok());
        relative
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/")
    }

    fn answer(&self, request: Request) -> Response {
        let id = request.id.clone();
        let result = match request.method.as_str() {
            Completion::METHOD => self.with::<CompletionParams, _>(request, |s, p| {
                let open = s.document(&p.text_document_position.text_document.uri)?;
                Some(CompletionResponse::Array(complete::complete(
                    &s.workspace,
                    &open.doc,
                    p.text_document_position.position,
                )))
            }),
            HoverRequest::METHOD => self.with::<HoverParams, _>(request, |s, p| {
                let at = &p.text_document_position_params;
                let open = s.document(&at.text_document.uri)?;
                navigate::hover(&s.workspace, &open.doc, at.position, &open.plans)
            }),
            GotoDefinition::METHOD => self.with::<GotoDefinitionParams, _>(request, |s, p| {
                let at = &p.text_document_position_params;
                let open = s.document(&at.text_document.uri)?;
                navigate::definition(&s.workspace, &open.doc, at.position)
                    .map(GotoDefinitionResponse::Scalar)
            }),
            DocumentSymbolRequest::METHOD => {
                self.with::<DocumentSymbolParams, _>(request, |s, p| {
                    let open = s.document(&p.text_document.uri)?;
                    Some(DocumentSymbolResponse::Nested(outline::symbols(&open.doc)))
                })
            }
            FoldingRangeRequest::METHOD => self.with::<FoldingRangeParams, _>(request, |s, p| {
                let open = s.document(&p.text_document.uri)?;
                Some(outline::folding(&open.doc))
            }),
            Formatting::METHOD => self.with::<DocumentFormattingParams, _>(request, |s, p| {
                let open = s.document(&p.text_document.uri)?;
                // A text that does not parse is left as it is (`loam fmt` refuses it too).
                let formatted = loam_compiler::fmt::format_source(&open.doc.text)?;
                if formatted == open.doc.text {
                    return Some(Vec::new());
                }
                let whole = open.doc.range(0, open.doc.text.len());
                Some(vec![TextEdit::new(whole, formatted)])
            }),
            CodeActionRequest::METHOD => self.with::<CodeActionParams, _>(request, |s, p| {
                let open = s.document(&p.text_document.uri)?;
                Some(actions::quick_fixes(
                    &open.published,
                    &open.doc,
                    &open.uri,
                    p.range,
                ))
            }),
            _ => Err((
                ErrorCode::MethodNotFound,
                format!("loam does not answer `{}`", request.method),
            )),
        };
        match result {
            Ok(value) => Response::new_ok(id, value),
            Err((code, message)) => Response::new_err(id, code as i32, message),
        }
    }

    /// Reads a request's parameters and answers with `handle`'s result (`null` for `None`).
    fn with<P: DeserializeOwned, R: Serialize>(
        &self,
        request: Request,
        handle: impl FnOnce(&Self, P) -> Option<R>,
    ) -> Result<serde_json::Value, (ErrorCode, String)> {
        let params: P = serde_json::from_value(request.params)
            .map_err(|e| (ErrorCode::InvalidParams, e.to_string()))?;
        serde_json::to_value(handle(self, params))
            .map_err(|e| (ErrorCode::InternalError, e.to_string()))
    }

    fn document(&self, uri: &Uri) -> Option<&Open> {
        self.open.get(uri.as_str())
    }
}
