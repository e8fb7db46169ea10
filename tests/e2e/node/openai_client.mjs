// openai_client.mjs — drives `facet serve` with the official `openai` npm client.
// usage: node openai_client.mjs BASE_URL MODEL SCENARIO_JSON
// SCENARIO_JSON: {"prompt_ids": [...] | null, "max_tokens": N, "messages": [...] | null,
//                 "tools": [...] | null (with messages: a two-turn tool-call round trip),
//                 "zod": true | absent (with messages: chat.completions.parse with a zod
//                 schema, which the server enforces by constrained decoding)}
// Prints one JSON object with what the client saw; exits non-zero on any client error
// that the scenario did not expect.
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const [baseURL, model, scenarioText] = process.argv.slice(2);
const sc = JSON.parse(scenarioText);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60000 });
const out = {};

if (sc.zod) {
  const Pet = z.object({ name: z.string().max(12), age: z.number().int(), happy: z.boolean() });
  const r = await client.chat.completions.parse({
    model, messages: sc.messages, max_completion_tokens: sc.max_tokens, temperature: 1.0,
    seed: sc.seed ?? 1, response_format: zodResponseFormat(Pet, "pet"),
  });
  const m = r.choices[0].message;
  out.parsed = { finish_reason: r.choices[0].finish_reason, content: m.content,
                 parsed: m.parsed, refusal: m.refusal ?? null,
                 schema: zodResponseFormat(Pet, "pet").json_schema.schema };
  console.log(JSON.stringify(out));
  process.exit(0);
}

if (sc.tools) {
  // turn 1: the named tool is forced; turn 2: the call and its result go back
  const t1 = await client.chat.completions.create({
    model, messages: sc.messages, tools: sc.tools, max_completion_tokens: sc.max_tokens,
    temperature: 0,
    tool_choice: { type: "function", function: { name: sc.tools[0].function.name } },
  });
  const m1 = t1.choices[0].message;
  out.turn1 = { finish_reason: t1.choices[0].finish_reason, usage: t1.usage,
                tool_calls: m1.tool_calls ?? null, content: m1.content };
  const call = m1.tool_calls?.[0] ?? {
    id: "call_0", type: "function",
    function: { name: sc.tools[0].function.name, arguments: JSON.stringify({ city: "Paris" }) },
  };
  const t2 = await client.chat.completions.create({
    model, tools: sc.tools, max_completion_tokens: sc.max_tokens, temperature: 0,
    messages: [...sc.messages, { role: "assistant", content: null, tool_calls: [call] },
               { role: "tool", tool_call_id: call.id, content: "sunny, 21 C" }],
  });
  out.turn2 = { finish_reason: t2.choices[0].finish_reason, usage: t2.usage,
                call_sent: call };
  console.log(JSON.stringify(out));
  process.exit(0);
}

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
