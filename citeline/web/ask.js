// The ask page and the viewers of citeline api. Every value from the server is put in
// the page as text (textContent), never as HTML: quotes and names come from documents.
"use strict";

const $ = (id) => document.getElementById(id);

function element(tag, text, attributes) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  return node;
}

function kindOf(fragment) {
  if (fragment.startsWith("#page=")) return "page";
  if (fragment.startsWith("#t=")) return "time";
  if (fragment.startsWith("#char=")) return "char";
  return "sheet";
}

function setStatus(text) {
  $("status").textContent = text;
}

function reset() {
  for (const id of ["answer", "refusal", "results", "closest"]) $(id).hidden = true;
  $("sources").replaceChildren();
  $("closest-list").replaceChildren();
  $("answer-text").replaceChildren();
  $("checks").textContent = "";
  $("refusal-message").textContent = "";
}

function number(value) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(3);
}

// One source (or closest passage) as a list item: where it is, how close, and its quote.
function sourceItem(c, idPrefix) {
  const item = element("li", null, {id: idPrefix + c.index, class: "source", "data-kind": kindOf(c.fragment),
                                    "data-path": c.path || c.document});
  const link = element("a", "[" + c.index + "] " + c.label, {class: "citation", href: "/view/" + c.chunk_id + "#cited",
                                                            target: "_blank", rel: "noopener"});
  item.append(link, " ", element("span", c.path || c.document, {class: "document"}), " ",
              element("code", c.fragment, {class: "fragment"}), " ",
              element("span", "distance " + number(c.distance), {class: "distance"}));
  if (c.rerank_score !== null && c.rerank_score !== undefined) {
    item.append(" ", element("span", "rerank " + number(c.rerank_score), {class: "rerank"}));
  }
  item.append(element("blockquote", c.quote, {class: "quote"}));
  return item;
}

function showSources(data) {
  if (data.refused) {
    // One sentence: the refusal's own message already names the cut.
    $("refusal-message").textContent = "No passage is close enough to answer from, so no answer is given.";
    $("refusal").hidden = false;
    const closest = data.closest || [];
    if (closest.length) {
      $("closest-note").textContent = data.closest_note || "";
      for (const c of closest) $("closest-list").append(sourceItem(c, "closest-"));
      $("closest").hidden = false;
    }
    setStatus("Refused: " + (data.refusal && data.refusal.message ? data.refusal.message : "NO ANSWER") + ".");
    return;
  }
  const list = $("sources");
  for (const c of data.citations) list.append(sourceItem(c, "source-"));
  $("results").hidden = false;
  const gate = data.gate === "answerability" ? " over answerability score " : " under cosine distance ";
  setStatus(data.citations.length + " sources" + gate + number(data.threshold) + ".");
}

function renderAnswer(text, checks) {
  const target = $("answer-text");
  target.replaceChildren();
  for (const part of text.split(/(\[\d+\])/)) {
    const n = /^\[(\d+)\]$/.exec(part);
    if (n && $("source-" + n[1])) target.append(element("a", part, {href: "#source-" + n[1], class: "ref"}));
    else target.append(document.createTextNode(part));
  }
  if (checks) {
    const notes = [];
    if (checks.unknown.length) notes.push("removed citations of sources that do not exist: " + checks.unknown.map((n) => "[" + n + "]").join(", "));
    if (checks.uncited.length) notes.push(checks.uncited.length + " sentences cite no source");
    $("checks").textContent = checks.ok ? "Every sentence cites a source that exists." : notes.join("; ");
  }
  $("answer").hidden = false;
}

async function readStream(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", answer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const name = (/^event: (.*)$/m.exec(block) || [])[1];
      const data = JSON.parse((/^data: (.*)$/m.exec(block) || [, "null"])[1]);
      if (name === "sources") showSources(data);
      else if (name === "delta") { answer += data.text; renderAnswer(answer, null); }
      else if (name === "done") { renderAnswer(data.answer, data.answer_checks); setStatus("Answered."); }
      else if (name === "error") setStatus("Generation failed: " + data.message);
    }
  }
}

async function onAsk(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  reset();
  setStatus("Searching…");
  let response;
  try {
    const body = {query: question, generate: $("generate").checked};
    // "?cut=0.6" in the page's address overrides the index's calibrated cut, as `ask --cut` does
    const cut = new URLSearchParams(location.search).get("cut");
    if (cut !== null && cut !== "") body.cut = Number(cut);
    response = await fetch("/ask", {method: "POST", headers: {"Content-Type": "application/json"},
                                    body: JSON.stringify(body)});
  } catch (error) {
    setStatus("The service did not answer: " + error);
    return;
  }
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    setStatus("Error " + response.status + ": " + (body && body.error ? body.error.message : response.statusText));
    return;
  }
  if ((response.headers.get("content-type") || "").startsWith("text/event-stream")) await readStream(response);
  else showSources(await response.json());
}

// A media citation plays from its start and stops at its end, whatever the browser does with #t=.
function stopAtEnd(player) {
  const start = Number(player.dataset.start), end = Number(player.dataset.end);
  player.addEventListener("loadedmetadata", () => {
    if (Math.abs(player.currentTime - start) > 0.25) player.currentTime = start;
  });
  player.addEventListener("timeupdate", () => { if (player.currentTime >= end) player.pause(); });
}

if ($("ask")) $("ask").addEventListener("submit", onAsk);
if ($("player")) stopAtEnd($("player"));
if ($("cited")) $("cited").scrollIntoView({block: "center"});
