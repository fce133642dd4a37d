// The ask page and the viewers of citeline api. Every value from the server is put in the
// page as text (textContent, text nodes), never as HTML: quotes and names come from documents.
"use strict";

const $ = (id) => document.getElementById(id);
const RECENT_KEY = "citeline.recent";  // recent questions: this browser's local storage, never the server
const RECENT_MAX = 8;
// Words too common to emphasise in a quote.
const COMMON = new Set(("a an and are as at be by can did do does for from had has have how i if in is it its " +
  "many much my no not of on or our than that the their them then there these they this to was we were what " +
  "when where which who whom why will with would you your").split(" "));

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
  if (fragment.startsWith("#slide=")) return "slide";
  if (fragment.startsWith("#row=")) return "rows";
  if (fragment.startsWith("#")) return "passage";
  return "sheet";
}

// Where a source sits, in words, from its label (title + place) and fragment.
function whereOf(c) {
  const label = c.label || "", kind = kindOf(c.fragment);
  const after = (re) => { const m = re.exec(label); return m ? m[1] : null; };
  if (kind === "page") {
    const pages = after(/, (pp?\. .+)$/);
    return pages ? pages.replace(/^pp\. /, "Pages ").replace(/^p\. /, "Page ") : "Page " + c.fragment.slice(6);
  }
  if (kind === "slide") return "Slide " + c.fragment.slice(7);
  if (kind === "rows") return after(/, (rows? .+)$/) || "Rows " + c.fragment.slice(5);
  if (kind === "time") return after(/, (\d+:\d\d.*)$/) || c.fragment.slice(3);
  if (kind === "sheet") {
    const sheet = c.fragment.split("!")[0] + "!";
    const at = label.indexOf(", " + sheet);
    return "Sheet " + (at >= 0 ? label.slice(at + 2) : c.fragment);
  }
  const at = label.indexOf(" > ");
  if (at >= 0) return label.slice(at + 3);
  const span = /^#char=(\d+),(\d+)$/.exec(c.fragment);
  return span ? "Characters " + span[1] + "–" + span[2] : "Text";
}

// The status line says what is going on; once a result is on the page it is read out to
// screen readers only (done), so the page does not say the same thing twice.
function setStatus(text, done) {
  $("status").textContent = text;
  $("status").classList.toggle("done", Boolean(done));
}

function reset() {
  for (const id of ["answer", "refusal", "results", "closest"]) $(id).hidden = true;
  for (const id of ["sources", "closest-list", "answer-text"]) $(id).replaceChildren();
  for (const id of ["checks", "refusal-message", "refusal-detail", "closest-note"]) $(id).textContent = "";
}

function number(value) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(3);
}

function questionWords(question) {
  const words = (question.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).filter((w) => w.length > 2 && !COMMON.has(w));
  return [...new Set(words)].sort((a, b) => b.length - a.length);
}

// The quote as text nodes, the question's words (and their plural or -ed forms) in <mark>.
function emphasised(quote, words, tag = "blockquote", cls = "quote") {
  const box = element(tag, null, {class: cls});
  if (!words.length) { box.textContent = quote; return box; }
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp("(?<![\\p{L}\\p{N}])(" + escaped.join("|") + ")(?:s|es|ed|d|ing)?(?![\\p{L}\\p{N}])", "giu");
  let last = 0;
  for (const m of quote.matchAll(pattern)) {
    box.append(document.createTextNode(quote.slice(last, m.index)), element("mark", m[0]));
    last = m.index + m[0].length;
  }
  box.append(document.createTextNode(quote.slice(last)));
  return box;
}

// One source (or closest passage) as a card: the document, where in it, the quote, the link.
function sourceCard(c, idPrefix, words) {
  const kind = kindOf(c.fragment);
  const item = element("li", null, {id: idPrefix + c.index, class: "card source", "data-kind": kind,
                                    "data-path": c.path || c.document, "aria-labelledby": idPrefix + c.index + "-name"});
  const head = element("div", null, {class: "card-head"});
  head.append(element("span", c.index, {class: "num", "aria-label": "source " + c.index}),
              element("h3", c.path || c.document, {class: "doc", id: idPrefix + c.index + "-name"}));
  const where = element("p", whereOf(c), {class: "where"});
  // A PDF's line breaks are where its column ended: shown as spaces (the quote itself is unchanged).
  const quote = emphasised(kind === "page" ? c.quote.replace(/([^\n])\n(?!\n)/g, "$1 ") : c.quote, words);
  // The sentence or table row that best matches the question, whole, above the (clamped) quote.
  const line = c.highlight && c.highlight.text.trim()
    ? emphasised(c.highlight.text.replace(/\s+/g, " ").trim(), words, "p", "answers") : null;
  if (line) line.title = "The line of this passage closest to your question (" + (c.highlight.locator || c.highlight.fragment) + ")";
  const foot = element("p", null, {class: "card-foot"});
  // A text source opens with the answering sentence marked and scrolled to, a sheet with its row,
  // a PDF at the page that sentence is printed on.
  const marked = (kind === "char" || kind === "sheet" || kind === "page") && c.highlight;
  const href = "/view/" + encodeURIComponent(c.chunk_id) + "?doc=" + encodeURIComponent(c.document_id) +
    (marked ? "&line=" + c.highlight.start + "," + c.highlight.end + "#line" : "#cited");
  const open = element("a", "Open at this place", {class: "open citation", href: href, target: "_blank", rel: "noopener"});
  open.append(element("span", " (" + (c.path || c.document) + ", " + whereOf(c) + "; opens in a new tab)", {class: "visually-hidden"}));
  foot.append(open, element("code", c.fragment, {class: "fragment visually-hidden"}));
  if (c.quote.length > 420) {
    quote.classList.add("clamped");
    const more = element("button", "Show the whole passage", {type: "button", class: "link", "aria-expanded": "false"});
    more.addEventListener("click", () => {
      const open = quote.classList.toggle("clamped");
      more.textContent = open ? "Show the whole passage" : "Show less";
      more.setAttribute("aria-expanded", String(!open));
    });
    foot.append(more);
  }
  const score = "distance " + number(c.distance) +
    (c.rerank_score !== null && c.rerank_score !== undefined ? " · rerank " + number(c.rerank_score) : "");
  foot.append(element("span", score, {class: "score distance"}));
  item.append(head, where, ...(line ? [line] : []), quote, foot);
  return item;
}

function showSources(data, question) {
  const words = questionWords(question);
  if (data.refused) {
    const terms = (data.refusal && data.refusal.terms) || [];
    $("refusal-message").textContent = terms.length
      ? "Your documents never mention " + terms.map((t) => "\u201c" + t + "\u201d").join(", ") +
        ", so no answer is given."
      : "Nothing in your documents is close enough to this question to answer it, so no answer is given.";
    $("refusal-detail").textContent = data.refusal && data.refusal.message ? data.refusal.message : "";
    $("refusal").hidden = false;
    const shown = showClosest(data, words);
    setStatus("No answer." + (shown ? " " + shown + " closest passages are shown below, not as an answer." : ""), true);
    return;
  }
  const list = $("sources");
  for (const c of data.citations) list.append(sourceCard(c, "source-", words));
  $("results").hidden = false;
  // Beside an answer, the passages the gate cut: the right one may be just over the cut.
  const shown = showClosest(data, words);
  setStatus((data.citations.length === 1 ? "1 source." : data.citations.length + " sources.") +
    (shown ? " " + shown + " closest passages below the cut follow them, not as an answer." : ""), true);
}

// The passages ask shows but did not keep as sources, marked as not an answer; how many.
function showClosest(data, words) {
  const closest = data.closest || [];
  if (!closest.length) return 0;
  // The heading already says "closest passages": the note says the rest of the server's words.
  const note = (data.closest_note || "").replace(/^closest passages,\s*/i, "");
  $("closest-note").textContent = note ? note.charAt(0).toUpperCase() + note.slice(1) + "." : "";
  for (const c of closest) $("closest-list").append(sourceCard(c, "closest-", words));
  $("closest").hidden = false;
  return closest.length;
}

function renderAnswer(text, checks) {
  const target = $("answer-text");
  target.replaceChildren();
  for (const part of text.split(/(\[\d+\])/)) {
    const n = /^\[(\d+)\]$/.exec(part);
    if (n && $("source-" + n[1])) target.append(element("a", part, {href: "#source-" + n[1], class: "ref",
                                                                   "aria-label": "source " + n[1]}));
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

async function readStream(response, question) {
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
      if (name === "sources") { showSources(data, question); if (!data.refused) { renderAnswer("", null); setStatus("Writing the answer…"); } }
      else if (name === "delta") { answer += data.text; renderAnswer(answer, null); }
      else if (name === "done") { renderAnswer(data.answer, data.answer_checks); setStatus("Answered from " + $("sources").children.length + " sources.", true); }
      else if (name === "error") setStatus("Writing the answer failed: " + data.message);
    }
  }
}

// ---- recent questions (local storage only) ----

function recent() {
  try { return JSON.parse(localStorage.getItem(RECENT_KEY) || "[]").filter((q) => typeof q === "string"); }
  catch (error) { return []; }
}

function remember(question) {
  const kept = [question, ...recent().filter((q) => q !== question)].slice(0, RECENT_MAX);
  try { localStorage.setItem(RECENT_KEY, JSON.stringify(kept)); } catch (error) { /* storage off: nothing kept */ }
  showRecent();
}

function showRecent() {
  const list = $("recent-list"), questions = recent();
  list.replaceChildren();
  for (const q of questions) {
    const button = element("button", q, {type: "button"});
    button.addEventListener("click", () => { $("question").value = q; askNow(q); });
    const item = element("li");
    item.append(button);
    list.append(item);
  }
  $("recent").hidden = questions.length === 0;
}

// ---- asking ----

let asking = 0;  // the latest question's number: an earlier, slower answer is dropped
let lastAsked = null;

async function askNow(question) {
  const mine = ++asking;
  lastAsked = question;
  reset();
  setStatus("Searching…");
  $("ask-button").disabled = true;
  const params = new URLSearchParams(location.search);
  if (params.get("q") !== question) {
    params.set("q", question);
    history.pushState(null, "", "?" + params.toString());
  }
  try {
    const body = {query: question, generate: Boolean($("generate") && $("generate").checked)};
    // "?cut=0.6" in the page's address overrides the index's calibrated cut, as `ask --cut` does
    const cut = params.get("cut");
    if (cut !== null && cut !== "") body.cut = Number(cut);
    performance.mark("ask-start");
    const response = await fetch("/ask", {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify(body)});
    if (mine !== asking) return;
    if (!response.ok) {
      const error = await response.json().catch(() => null);
      setStatus("Error " + response.status + ": " + (error && error.error ? error.error.message : response.statusText));
      return;
    }
    remember(question);
    if ((response.headers.get("content-type") || "").startsWith("text/event-stream")) await readStream(response, question);
    else showSources(await response.json(), question);
    performance.measure("ask", "ask-start");  // tests/e2e/test_browser.py reads the round trip from here
  } catch (error) {
    if (mine === asking) setStatus("The service did not answer: " + error);
  } finally {
    if (mine === asking) $("ask-button").disabled = false;
  }
}

function onAsk(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (question) askNow(question);
}

function startAskPage() {
  $("ask").addEventListener("submit", onAsk);
  $("recent-clear").addEventListener("click", () => {
    try { localStorage.removeItem(RECENT_KEY); } catch (error) { /* nothing kept */ }
    showRecent();
    $("question").focus();
  });
  showRecent();
  // Back and Forward ask the address's question again; following a [n] to its card (a
  // fragment change, which fires popstate too) does not.
  const fromAddress = () => {
    const q = new URLSearchParams(location.search).get("q");
    if (q && q !== lastAsked) { $("question").value = q; askNow(q); }
  };
  window.addEventListener("popstate", fromAddress);
  fromAddress();
}

// A media citation plays from its start and stops at its end, whatever the browser does with #t=.
function stopAtEnd(player) {
  const start = Number(player.dataset.start), end = Number(player.dataset.end);
  player.addEventListener("loadedmetadata", () => {
    if (Math.abs(player.currentTime - start) > 0.25) player.currentTime = start;
  });
  player.addEventListener("timeupdate", () => { if (player.currentTime >= end) player.pause(); });
}

if ($("ask")) startAskPage();
if ($("player")) stopAtEnd($("player"));
if ($("cited")) $("cited").scrollIntoView({block: "center"});
