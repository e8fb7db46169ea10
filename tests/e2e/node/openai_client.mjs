// openai_client.mjs — drives `facet serve` with the official `openai` npm client.
// usage: node openai_client.mjs BASE_URL MODEL SCENARIO_JSON
// SCENARIO_JSON: {"prompt_ids": [...], "max_tokens": N, "messages": [...] | null}
// Prints one JSON object with what the client saw; exits non-zero on any client error
// that the scenario did not expect.
import OpenAI from "openai";

const [baseURL, model, scenarioText] = process.argv.slice(2);
const sc = JSON.parse(scenarioText);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60000 });
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);
try {
  await client.models.retrieve("no-such-model");
  out.missing_model_status = 200;
} catch (e) {
  out.missing_model_status = e.status;
  out.missing_model_class = e.constructor.name;
}

const c = await client.completions.create({
  model, prompt: sc.prompt_ids, max_tokens: sc.max_tokens, temperature: 0, logprobs: 1,
});
out.completion = { text: c.choices[0].text, finish_reason: c.choices[0].finish_reason,
                   usage: c.usage, tokens: c.choices[0].logprobs.tokens };

let streamed = "";
let finish = null;
const s = await client.completions.create({
  model, prompt: sc.prompt_ids, max_tokens: sc.max_tokens, temperature: 0, stream: true,
});
for await (const chunk of s) {
  streamed += chunk.choices[0]?.text ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
out.completion_stream = { text: streamed, finish_reason: finish };

try {
  await client.completions.create({ model, prompt: sc.prompt_ids, max_tokens: 0 });
  out.bad_request_status = 200;
} catch (e) {
  out.bad_request_status = e.status;
  out.bad_request_param = e.param ?? e.error?.param ?? null;
}

if (sc.messages) {
  const r = await client.chat.completions.create({
    model, messages: sc.messages, max_completion_tokens: sc.max_tokens, temperature: 0,
    seed: 1,
  });
  out.chat = { content: r.choices[0].message.content, role: r.choices[0].message.role,
               finish_reason: r.choices[0].finish_reason, usage: r.usage, object: r.object };
  let text = "";
  let role = null;
  let fin = null;
  let usage = null;
  const st = await client.chat.completions.create({
    model, messages: sc.messages, max_completion_tokens: sc.max_tokens, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  for await (const chunk of st) {
    if (chunk.usage) usage = chunk.usage;
    const ch = chunk.choices[0];
    if (!ch) continue;
    role = ch.delta.role ?? role;
    text += ch.delta.content ?? "";
    fin = ch.finish_reason ?? fin;
  }
  out.chat_stream = { content: text, role, finish_reason: fin, usage };
}
console.log(JSON.stringify(out));
