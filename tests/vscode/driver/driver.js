// Loaded into code-server beside the README's extension (tests/test_lsp_vscode.py): opens $PDLINT_DECODE, waits for
// pdlint's diagnostics, edits $PDLINT_PREFILL without saving, waits for the decode file's to change, and writes what
// VS Code shows (vscode.languages.getDiagnostics) to $PDLINT_OUT as JSON.
const fs = require("fs");
const vscode = require("vscode");

function shown(uri) {
  return vscode.languages.getDiagnostics(uri).map((d) => ({
    code: typeof d.code === "object" ? d.code.value : d.code,
    href: typeof d.code === "object" ? String(d.code.target) : null,
    line: d.range.start.line, character: d.range.start.character,
    severity: d.severity, source: d.source, message: d.message,
    related: (d.relatedInformation || []).map((r) => ({ file: r.location.uri.fsPath, line: r.location.range.start.line })),
  }));
}

function waitFor(test, ms) {
  return new Promise((resolve) => {
    if (test()) return resolve(true);
    const sub = vscode.languages.onDidChangeDiagnostics(() => { if (test()) done(true); });
    const timer = setTimeout(() => done(test()), ms);
    function done(ok) { clearTimeout(timer); sub.dispose(); resolve(ok); }
  });
}

exports.activate = async function () {
  const out = process.env.PDLINT_OUT;
  if (!out) return;
  const result = {};
  try {
    const decode = vscode.Uri.file(process.env.PDLINT_DECODE), prefill = vscode.Uri.file(process.env.PDLINT_PREFILL);
    const has = (code) => shown(decode).some((d) => d.code === code);
    const decodeDoc = await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(decode));
    result.language = decodeDoc.document.languageId;
    result.opened = await waitFor(() => has("tp-ratio[moriio]"), 60000);
    result.decode_before = shown(decode);

    const doc = await vscode.workspace.openTextDocument(prefill);
    await vscode.window.showTextDocument(doc);
    const edit = new vscode.WorkspaceEdit();
    for (let n = 0; n < doc.lineCount; n++) {
      if (doc.lineAt(n).text.startsWith("vllm_tensor_parallel_size:")) {
        edit.replace(prefill, doc.lineAt(n).range, "vllm_tensor_parallel_size: 2");
      }
    }
    result.applied = await vscode.workspace.applyEdit(edit);
    result.edited = await waitFor(() => !has("tp-ratio[moriio]"), 60000);
    result.decode_after = shown(decode);
    result.modified = doc.isDirty;
  } catch (e) {
    result.error = String(e && e.stack || e);
  }
  fs.writeFileSync(out + ".tmp", JSON.stringify(result));
  fs.renameSync(out + ".tmp", out);
};
