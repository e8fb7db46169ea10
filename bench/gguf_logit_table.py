"""gguf_logit_table.py — the per-file logit error table of bench/RESULTS.md (issue 18):
facet (build/facet) on the ../shared GGUF corpus against llama.cpp's expected logits,
default weights, FACET_GGUF_BLOCKS=1, and FACET_GGUF_BLOCKS=1 with an f32 KV cache."""
import json, subprocess, os, numpy as np
C = os.environ.get("FACET_SHARED", "../shared") + "/corpus/gguf"
def rel(name, env, extra):
    exp=json.load(open(f"{C}/expected/{name}.json"))
    ref=np.fromfile(f"{C}/expected/{name}.f32",dtype="<f4").reshape(48,512).astype(np.float64)
    e=dict(os.environ); e.update(env)
    p=subprocess.run([os.environ.get("FACET_BIN", "build/facet"),"run",f"{C}/models/{name}.gguf","--prompt-ids",",".join(map(str,exp["prompt_ids"])),"-n","1","--ignore-eos","--dump-logits","/tmp/q32t.f32",*extra],capture_output=True,text=True,env=e)
    got=np.fromfile("/tmp/q32t.f32",dtype="<f4").reshape(-1,512)[:48].astype(np.float64)
    r=np.linalg.norm(got-ref,axis=1)/np.linalg.norm(ref,axis=1)
    return r, exp["errors"]["vs_float64_ref_on_dequantized"]["rel_l2_max"]
print("| file | default (bf16 KV) max | blocks (bf16 KV) max | blocks, f32 KV: positions <= 1e-5 / max | README (b) max |")
for t in ["Q4_0","Q4_1","Q5_0","Q5_1","IQ4_NL","Q8_0"]:
    for fam in ["llama","qwen3"]:
        n=f"{fam}-{t}"
        a,nz=rel(n,{},[]); b,_=rel(n,{"FACET_GGUF_BLOCKS":"1"},[]); c,_=rel(n,{"FACET_GGUF_BLOCKS":"1"},["--kv-cache","f32"])
        print(f"| {n} | {a.max():.1e} | {b.max():.1e} | {(c<=1e-5).sum()}/48, {c.max():.1e} | {nz:.1e} |")
