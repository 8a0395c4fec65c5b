// The loam extension's only code: it starts `loam lsp` as the language server of `.loam` files.
// Plain CommonJS, so there is no build step: `npm install` brings vscode-languageclient.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const settings = vscode.workspace.getConfiguration('loam');
  const args = [];
  const catalogue = settings.get('catalogue');
  if (catalogue) {
    args.push('--catalogue', catalogue);
  }
  args.push('lsp');
  const server = { command: settings.get('path') || 'loam', args };
  client = new LanguageClient(
    'loam',
    'loam',
    { run: server, debug: server },
    { documentSelector: [{ scheme: 'file', language: 'loam' }] },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
