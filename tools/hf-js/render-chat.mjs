// Renders chat templates with @huggingface/jinja (Hugging Face's JavaScript Jinja, the engine of transformers.js's
// apply_chat_template), as an independent reference for ane4j's renderer. Reads one JSON object on stdin:
//   { "template": "...", "contexts": [ { "messages": [...], "add_generation_prompt": bool, "bos_token": ..., ... } ] }
// and prints a JSON array with, per context, {"text": rendered} or {"error": message}. Used by ChatTemplateNpmTest.
import { Template } from "@huggingface/jinja";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const template = new Template(input.template);
const out = input.contexts.map((ctx) => {
  try {
    // @huggingface/jinja defines raise_exception itself; tools default to null (Python's None) as apply_chat_template passes them
    return { text: template.render({ tools: null, documents: null, ...ctx }) };
  } catch (e) {
    return { error: String(e.message ?? e) };
  }
});
console.log(JSON.stringify(out));
