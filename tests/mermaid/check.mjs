// Parse every ```mermaid block of the Markdown files named on the command line with mermaid.parse.
// Prints one JSON line per block ({file, index, ok, type | error}); exits 1 if any block fails to parse.
// Mermaid's Node build sanitizes with DOMPurify, which needs a DOM: jsdom provides the window.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const { window } = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

let failed = 0;
for (const file of process.argv.slice(2)) {
  const blocks = [...readFileSync(file, "utf8").matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  for (const [index, text] of blocks.entries()) {
    try {
      const result = await mermaid.parse(text);
      console.log(JSON.stringify({ file, index, ok: true, type: result.diagramType }));
    } catch (err) {
      failed += 1;
      console.log(JSON.stringify({ file, index, ok: false, error: String(err.message || err).slice(0, 500) }));
    }
  }
}
process.exit(failed ? 1 : 0);
