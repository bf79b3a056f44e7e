// nudge's web view. Plain JavaScript, no dependencies. Everything an agent wrote (its
// screen, its replies, its dialogs) is put on the page as text (textContent), never as
// markup.
'use strict';

const S = {
  who: null, rts: new Map(), trig: new Map(), story: new Map(),
  es: null, loaded: false, queue: [], page: null, term: null, dirty: false, lastSeq: 0,
  typing: false, ctrl: false, keys: [], keysBusy: false, swallow: null,
  cards: [], fleetBusy: false, fleetAgain: false, fleetTimer: null,
};

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

async function api(method, path, body) {
  const opt = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) { opt.headers['Content-Type'] = 'application/json'; opt.body = JSON.stringify(body); }
  const r = await fetch('/api' + path, opt);
  let data = null;
  try { data = await r.json(); } catch (_) { /* empty body */ }
  if (!r.ok) {
    const e = new Error((data && data.message) || r.statusText);
    e.status = r.status; e.code = data && data.error_code;
    throw e;
  }
  return data;
}

const may = (verb) => !!S.who && (S.who.verbs || []).includes(verb);
const clip = (s, n) => (s && s.length > n ? s.slice(0, n) + '…' : s || '');
const when = (t) => (t ? new Date(t).toLocaleTimeString() : '');

// ---- pairing ----

function pairPage() {
  const code = location.hash.slice(1);
  history.replaceState(null, '', '/pair'); // the code leaves the address bar at once
  const main = document.getElementById('main');
  const msg = el('p', { id: 'pair-msg', class: 'muted' });
  const btn = el('button', { id: 'pair', class: 'primary', onclick: async () => {
    btn.disabled = true;
    try {
      const r = await fetch('/pair', { method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) });
      const d = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(d.message || r.statusText);
      location.replace('/');
    } catch (e) { msg.textContent = e.message; msg.className = 'err'; }
  } }, 'Pair this browser');
  main.replaceChildren(el('section', { class: 'panel' },
    el('h3', {}, 'Pair this browser with nudge'),
    el('p', {}, 'This one-time link gives this browser a device token (kept in a cookie no script can read). ',
      'Revoke it any time with ', el('code', {}, 'nudge token revoke'), '.'),
    code ? btn : el('p', { class: 'err' }, 'This link has no code: run nudge web pair again.'), msg));
}

function unpaired(why) {
  if (S.es) { S.es.close(); S.es = null; }
  setLive(false);
  document.getElementById('who').textContent = '';
  document.getElementById('main').replaceChildren(el('section', { class: 'panel', id: 'unpaired' },
    el('h3', {}, 'This browser is not paired'),
    el('p', {}, why || ''),
    el('p', {}, 'On the machine running nudge: ', el('code', {}, 'nudge web pair --scope answer'), ', then open the link it prints here.')));
}

// ---- state ----

function newer(old, cur) {
  return !old || !cur.updated_at || !old.updated_at || cur.updated_at >= old.updated_at;
}

function note(rid, text) {
  if (!rid) return;
  const l = S.story.get(rid) || [];
  l.unshift({ at: new Date().toISOString(), text });
  if (l.length > 100) l.length = 100;
  S.story.set(rid, l);
}

function putRuntime(rt) {
  const old = S.rts.get(rt.runtime_id);
  if (!newer(old, rt)) return;
  if (old && old.status !== rt.status) note(rt.runtime_id, 'status ' + old.status + ' → ' + rt.status);
  if (old && old.paused !== rt.paused) note(rt.runtime_id, rt.paused ? 'paused' : 'resumed');
  if (old && (old.dialog && old.dialog.dialog_id) !== (rt.dialog && rt.dialog.dialog_id)) {
    note(rt.runtime_id, rt.dialog ? 'dialog: ' + rt.dialog.title : 'dialog closed');
  }
  S.rts.set(rt.runtime_id, Object.assign({}, old || {}, rt));
}

function putTrigger(t) {
  const old = S.trig.get(t.trigger_id);
  if (!newer(old, t)) return;
  if (!old || old.state !== t.state) note(t.runtime_id, 'trigger ' + t.trigger_id + ' ' + t.state + (t.error_code ? ' ' + t.error_code : ''));
  S.trig.set(t.trigger_id, t);
}

// The fleet page draws the cards the daemon makes (package view, the same rows nudge
// watch draws): all of them from GET /api/v1/fleet at the start, then each one the event
// stream sends as it changes (`event: card`). A reply is on its trigger, not its event:
// the cards are read again then, one read at a time with a quiet 20 ms after each.
// putCard reports whether it drew the card itself: a card the fleet page shows already
// is replaced in place at once, not at the next frame (a frame is up to 17 ms away, more
// on a busy machine); a new or gone card redraws the page.
function putCard(c) {
  const i = S.cards.findIndex((o) => o.runtime_id === c.runtime_id);
  if (c.gone) { if (i >= 0) S.cards.splice(i, 1); return false; }
  if (i >= 0) {
    S.cards[i] = c;
    const old = S.page === 'fleet' && document.querySelector('#fleet [data-runtime="' + CSS.escape(c.runtime_id) + '"]');
    if (old) { old.replaceWith(fleetCard(c)); return true; }
    return false;
  }
  S.cards.push(c);
  S.cards.sort((a, b) => (a.workspace_id === b.workspace_id ? a.role.localeCompare(b.role) : a.workspace_id < b.workspace_id ? -1 : 1));
  return false;
}

async function refreshFleet() {
  if (S.fleetBusy || S.fleetTimer) { S.fleetAgain = true; return; }
  S.fleetBusy = true; S.fleetAgain = false;
  try {
    S.cards = await api('GET', '/v1/fleet');
    render();
  } catch (e) { if (e.status === 401) unpaired(e.message); }
  S.fleetBusy = false;
  S.fleetTimer = setTimeout(() => {
    S.fleetTimer = null;
    if (S.fleetAgain) refreshFleet();
  }, 20);
}

function apply(ev) {
  if (ev.seq) S.lastSeq = ev.seq;
  if (ev.type === 'reply') refreshFleet();
  switch (ev.type) {
    case 'runtime': if (ev.runtime) putRuntime(ev.runtime); break;
    case 'trigger': if (ev.trigger) putTrigger(ev.trigger); break;
    case 'readiness': {
      const d = ev.detail || {}, rt = S.rts.get(d.runtime_id);
      if (rt && rt.readiness !== d.readiness) note(d.runtime_id, 'readiness ' + rt.readiness + ' → ' + d.readiness);
      if (rt) Object.assign(rt, { readiness: d.readiness, operator_busy: d.operator_busy, summary: d.summary });
      break;
    }
    case 'reply': {
      const d = ev.detail || {};
      note(d.runtime_id, 'reply to ' + d.trigger_id);
      api('GET', '/v1/triggers/' + encodeURIComponent(d.trigger_id)).then((t) => { S.trig.set(t.trigger_id, t); render(); }).catch(() => {});
      break;
    }
    case 'alert': case 'fallback': {
      const d = ev.detail || {};
      note(d.runtime_id, ev.type + ': ' + (d.message || d.kind || d.backend || ''));
      break;
    }
  }
  render();
}

async function load() {
  const [rts, ts, cards] = await Promise.all([api('GET', '/v1/runtimes'), api('GET', '/v1/triggers?newest=1&limit=300'), api('GET', '/v1/fleet')]);
  S.cards = cards;
  for (const rt of rts) putRuntime(rt);
  for (const t of ts) putTrigger(t);
  S.loaded = true;
  for (const ev of S.queue.splice(0)) apply(ev);
  render();
}

function setLive(on) { document.getElementById('live').className = 'dot' + (on ? ' on' : ''); }

function connect() {
  const es = new EventSource('/api/v1/events');
  S.es = es;
  es.onopen = () => { setLive(true); if (!S.loaded) load().catch(fatal); };
  es.addEventListener('card', (m) => {
    let c;
    try { c = JSON.parse(m.data); } catch (_) { return; }
    if (!putCard(c)) render();
  });
  es.onmessage = (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch (_) { return; }
    if (S.loaded) apply(ev); else S.queue.push(ev);
  };
  es.onerror = () => {
    setLive(false);
    // The browser reconnects by itself and resumes (Last-Event-ID). A stream it gave up
    // on (its events expired from the daemon's window, the daemon was away long) starts
    // again from a fresh read of the state; a refused token ends it.
    api('GET', '/v1/whoami').then(() => {
      if (es.readyState !== EventSource.CLOSED || S.es !== es) return;
      S.loaded = false; S.queue = [];
      setTimeout(connect, 1000);
    }).catch((e) => { if (e.status === 401) unpaired(e.message); });
  };
}

function fatal(e) {
  if (e.status === 401) return unpaired(e.message);
  document.getElementById('main').replaceChildren(el('p', { class: 'err' }, String(e.message || e)));
}

// ---- views ----

// render draws once per frame however many events came; a page the browser gives no
// frames (a hidden tab) still draws, at the timer's pace.
function render() {
  if (S.dirty) return;
  S.dirty = true;
  const go = () => { if (S.dirty) { S.dirty = false; draw(); } };
  requestAnimationFrame(go);
  setTimeout(go, 100);
}

function route() {
  const m = location.hash.match(/^#\/rt\/(.+)$/);
  return m ? { page: 'runtime', id: decodeURIComponent(m[1]) } : { page: 'fleet' };
}

function draw() {
  if (!S.loaded) return;
  const r = route();
  if (r.page === 'runtime') return drawRuntime(r.id);
  closeTerm();
  S.page = 'fleet';
  drawFleet();
}

function triggersOf(id) {
  return [...S.trig.values()].filter((t) => t.runtime_id === id).sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
}

function stateBadge(t) { return el('span', { class: 'badge ' + t.state, 'data-state': t.state }, t.state + (t.error_code ? ' ' + t.error_code : '')); }

function drawFleet() {
  const out = [];
  let ws = null, grid = null;
  for (const c of S.cards) { // by workspace, then role
    if (c.workspace_id !== ws) {
      ws = c.workspace_id; grid = el('div', { class: 'grid' });
      out.push(el('h2', {}, ws), grid);
    }
    grid.append(fleetCard(c));
  }
  if (!out.length) out.push(el('p', { class: 'muted' }, 'No runtimes this token may see.'));
  document.getElementById('main').replaceChildren(el('div', { id: 'fleet' }, out));
}

const badgeClass = { 'operator typing': 'BUSY', 'dialog waits': 'dialog' };

function fleetCard(c) {
  return el('a', { class: 'card', href: '#/rt/' + encodeURIComponent(c.runtime_id), 'data-runtime': c.runtime_id },
    el('div', { class: 'row' },
      el('span', { class: 'name' }, c.role), el('span', { class: 'muted small' }, c.agent),
      el('span', { class: 'badge' }, c.status),
      el('span', { class: 'badge ' + c.state, 'data-readiness': c.readiness, 'data-word': c.state }, c.state),
      c.badges.map((b) => el('span', { class: 'badge ' + (badgeClass[b] || ''), 'data-paused': b === 'paused' ? '' : null,
        'data-dialog': b === 'dialog waits' && c.dialog ? c.dialog.dialog_id : null }, b))),
    c.dialog && el('div', { class: 'row small' }, 'asks: ', el('span', { class: 'clip' }, c.dialog.title)),
    el('div', { class: 'row small muted' }, 'queue ', el('span', { 'data-queue': '' }, String(c.queue))),
    c.last ? el('div', { class: 'row small', 'data-last': c.last.trigger_id },
      el('span', { class: 'badge ' + c.last.state, 'data-state': c.last.state }, c.last.word),
      el('span', { class: 'clip' }, clip(c.last.text, 90)))
      : el('div', { class: 'small muted' }, 'no receipt yet'));
}

// The runtime page is built once per visit; its parts are redrawn in place so what the
// operator is typing (a reason, a prompt) is never lost.
function drawRuntime(id) {
  const rt = S.rts.get(id);
  const main = document.getElementById('main');
  if (!rt) { main.replaceChildren(el('p', { class: 'muted' }, 'No runtime ' + id + ' (or not yours to see).')); return; }
  if (S.page !== 'runtime:' + id) {
    closeTerm();
    S.page = 'runtime:' + id;
    main.replaceChildren(el('div', { id: 'runtime', 'data-runtime': id },
      el('p', {}, el('a', { href: '#/' }, '← fleet')),
      el('div', { id: 'rt-head' }), el('section', { id: 'dialog', class: 'panel', hidden: true }),
      el('div', { id: 'controls' }), el('section', { class: 'panel' }, el('h3', {}, 'Triggers'), el('div', { id: 'triggers' })),
      el('section', { class: 'panel' }, el('h3', {}, 'Story'), el('ul', { id: 'story', class: 'story' })),
      terminalPanel(rt)));
    drawControls(rt);
  }
  drawHead(rt);
  drawDialog(rt);
  document.getElementById('pause').hidden = rt.paused;
  document.getElementById('resume').hidden = !rt.paused;
  document.getElementById('triggers').replaceChildren(...triggersOf(id).slice(0, 50).map((t) =>
    el('div', { class: 'trig', 'data-trigger': t.trigger_id },
      el('div', { class: 'row small' }, stateBadge(t), el('span', { class: 'muted' }, t.trigger_id + ' · ' + when(t.created_at))),
      el('pre', {}, clip(t.prompt, 2000)),
      t.reply && el('div', {}, el('span', { class: 'muted small' }, 'reply'), el('pre', { class: 'reply' }, t.reply)),
      t.message && t.state === 'failed' && el('div', { class: 'err small' }, t.message))));
  document.getElementById('story').replaceChildren(...(S.story.get(id) || []).slice(0, 40).map((s) =>
    el('li', {}, el('span', { class: 'muted' }, when(s.at) + ' '), s.text)));
}

function drawHead(rt) {
  document.getElementById('rt-head').replaceChildren(
    el('div', { class: 'row' }, el('span', { class: 'name' }, rt.workspace_id + ' / ' + rt.role),
      el('span', { class: 'muted' }, rt.agent), el('span', { class: 'badge' }, rt.status),
      el('span', { class: 'badge ' + rt.readiness, 'data-readiness': rt.readiness }, rt.readiness || '?'),
      rt.paused && el('span', { class: 'badge' }, 'paused'),
      rt.operator_busy && el('span', { class: 'badge BUSY' }, 'operator typing')),
    rt.summary && el('p', { class: 'small muted' }, rt.summary));
}

function drawDialog(rt) {
  const box = document.getElementById('dialog');
  const d = rt.dialog;
  if (!d) { box.hidden = true; box.replaceChildren(); box.dataset.id = ''; return; }
  if (box.dataset.id === d.dialog_id) return;
  box.dataset.id = d.dialog_id;
  box.hidden = false;
  const msg = el('p', { id: 'answer-msg', class: 'small' });
  const reason = el('input', { id: 'reason', placeholder: 'reason (goes into the audit log)', maxlength: '500' });
  const can = may('answer');
  const send = (choice) => async () => {
    if (!reason.value.trim()) { msg.textContent = 'Give a reason first.'; msg.className = 'err'; reason.focus(); return; }
    try {
      const r = await api('POST', '/v1/runtimes/' + encodeURIComponent(rt.runtime_id) + '/answer',
        { dialog_id: d.dialog_id, choice, reason: reason.value.trim() });
      msg.textContent = 'Answered: ' + r.option.label; msg.className = 'small';
      note(rt.runtime_id, 'answered ' + r.option.label + ' (' + reason.value.trim() + ')');
    } catch (e) { msg.textContent = e.message; msg.className = 'err'; }
  };
  const opts = (d.options || []).map((o) => el('button', { onclick: send(o.key), disabled: !can, 'data-key': o.key,
    class: o.key === d.approve_key ? 'primary' : o.key === d.deny_key ? 'danger' : '' }, o.label));
  box.replaceChildren(el('h3', {}, 'The agent asks: ', d.title),
    d.command && el('pre', { class: 'term' }, d.command),
    d.text && el('pre', {}, clip(d.text, 4000)),
    can ? reason : el('p', { class: 'muted small' }, 'This browser may not answer (scope).'),
    el('div', { class: 'actions' }, opts), msg);
}

function drawControls(rt) {
  const id = rt.runtime_id;
  const msg = el('p', { id: 'ctl-msg', class: 'small' });
  const act = (path) => async () => {
    try { putRuntime(await api('POST', '/v1/runtimes/' + encodeURIComponent(id) + '/' + path, {})); render(); }
    catch (e) { msg.textContent = e.message; msg.className = 'err'; }
  };
  const prompt = el('textarea', { id: 'prompt', placeholder: 'Prompt to send as a trigger (never typed over a human draft)', maxlength: '65536' });
  const sendBtn = el('button', { id: 'send', class: 'primary', onclick: async () => {
    const text = prompt.value.trim();
    if (!text) return;
    sendBtn.disabled = true;
    try {
      const t = await api('POST', '/v1/triggers', { workspace: rt.workspace_id, agent: rt.agent_id || rt.role, prompt: text });
      putTrigger(t); prompt.value = ''; msg.textContent = 'Sent ' + t.trigger_id; msg.className = 'small';
      render();
    } catch (e) { msg.textContent = e.message; msg.className = 'err'; }
    sendBtn.disabled = false;
  } }, 'Send trigger');
  document.getElementById('controls').replaceChildren(
    may('trigger') && el('section', { class: 'panel' }, el('h3', {}, 'Prompt'), prompt, el('div', { class: 'actions' }, sendBtn)),
    el('div', { class: 'actions' },
      el('button', { id: 'pause', onclick: act('pause'), disabled: !may('admin'), title: may('admin') ? '' : 'scope: operate' }, 'Pause triggers'),
      el('button', { id: 'resume', onclick: act('resume'), disabled: !may('admin') }, 'Resume triggers')),
    msg);
}

// ---- terminal ----

// The terminal is read-only until the viewer switches typing on (a device whose scope
// holds the type verb: S.who.typing); it is off again on every visit. Keys go in order,
// one request at a time, the ones typed meanwhile together in the next.
function terminalPanel(rt) {
  const pre = el('pre', { id: 'term', class: 'term', hidden: true });
  const typing = el('div', { id: 'typing', hidden: true });
  const btn = el('button', { id: 'term-toggle', onclick: () => {
    if (S.term) { closeTerm(); return; }
    pre.hidden = false; btn.textContent = 'Hide terminal';
    if (typeBtn) typeBtn.hidden = false;
    S.term = new EventSource('/api/v1/runtimes/' + encodeURIComponent(rt.runtime_id) + '/terminal');
    S.term.onmessage = (m) => { try { pre.textContent = JSON.parse(m.data).lines.join('\n'); } catch (_) { /* skip */ } };
  } }, 'Show terminal');
  const can = S.who && S.who.typing;
  const typeBtn = can ? el('button', { id: 'term-type', hidden: true, 'aria-pressed': 'false', onclick: () => setTyping(!S.typing) }, 'Type into the pane') : null;
  if (can) typing.append(...typingParts(rt.runtime_id));
  return el('section', { class: 'panel' }, el('h3', {}, 'Terminal ', el('span', { id: 'term-mode', class: 'muted small' }, 'read-only')),
    S.who && S.who.terminal ? [el('div', { class: 'actions' }, btn, typeBtn), pre, typing] : el('p', { class: 'muted small' }, 'Not served by this daemon.'));
}

const keyNames = { Enter: 'Enter', Tab: 'Tab', Escape: 'Escape', Backspace: 'BSpace', Delete: 'DC', ArrowUp: 'Up', ArrowDown: 'Down',
  ArrowLeft: 'Left', ArrowRight: 'Right', Home: 'Home', End: 'End', PageUp: 'PPage', PageDown: 'NPage' };

// typingParts is the input line keys are typed into (a text field, so a phone shows its
// keyboard) and the key bar: Esc, Tab, Ctrl (sticky: it applies to the next key), the
// arrows and Enter.
function typingParts(id) {
  const msg = el('p', { id: 'term-msg', class: 'small' });
  const input = el('input', { id: 'term-input', autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false',
    placeholder: 'keys typed here go to the pane' });
  const ctrl = el('button', { id: 'key-ctrl', class: 'key', 'aria-pressed': 'false', onclick: () => { setCtrl(!S.ctrl); input.focus(); } }, 'Ctrl');
  const press = (name) => { sendKey(id, { key: S.ctrl && /^(Up|Down|Left|Right)$/.test(name) ? 'C-' + name : name }); setCtrl(false); input.focus(); };
  const key = (label, name) => el('button', { class: 'key', 'data-key': name, onclick: () => press(name) }, label);
  input.addEventListener('keydown', (e) => {
    let name = keyNames[e.key];
    if (!name && e.key.length === 1 && /[a-z]/i.test(e.key) && (e.ctrlKey || S.ctrl)) name = 'C-' + e.key.toLowerCase();
    if (!name) return;
    e.preventDefault();
    if (name.startsWith('C-')) S.swallow = e.key; // a browser that types it all the same
    press(name);
  });
  input.addEventListener('keyup', () => { S.swallow = null; });
  input.addEventListener('input', () => {
    const text = input.value;
    input.value = '';
    if (!text || text === S.swallow) return;
    if (S.ctrl && /^[a-z]$/i.test(text)) { press('C-' + text.toLowerCase()); return; }
    sendKey(id, { text });
  });
  return [input, el('div', { id: 'keybar', class: 'keybar' }, key('Esc', 'Escape'), key('Tab', 'Tab'), ctrl,
    key('←', 'Left'), key('↑', 'Up'), key('↓', 'Down'), key('→', 'Right'), key('Enter', 'Enter')), msg];
}

function setCtrl(on) {
  S.ctrl = on;
  const b = document.getElementById('key-ctrl');
  if (b) { b.setAttribute('aria-pressed', String(on)); b.classList.toggle('on', on); }
}

function setTyping(on) {
  S.typing = on; S.keys = []; setCtrl(false);
  const b = document.getElementById('term-type'), box = document.getElementById('typing');
  if (b) { b.textContent = on ? 'Stop typing' : 'Type into the pane'; b.setAttribute('aria-pressed', String(on)); }
  if (box) box.hidden = !on;
  const mode = document.getElementById('term-mode');
  if (mode) mode.textContent = on ? 'typing: your keys go to the pane' : 'read-only';
  if (on) { const i = document.getElementById('term-input'); if (i) i.focus(); }
}

function sendKey(id, k) {
  if (!S.typing) return;
  S.keys.push(k);
  if (!S.keysBusy) flushKeys(id);
}

async function flushKeys(id) {
  S.keysBusy = true;
  while (S.typing && S.keys.length) {
    const keys = S.keys.splice(0);
    const msg = document.getElementById('term-msg');
    try {
      await api('POST', '/v1/runtimes/' + encodeURIComponent(id) + '/keys', { keys });
      if (msg) { msg.textContent = ''; msg.className = 'small'; }
    } catch (e) {
      S.keys = []; // what was typed after a refused key is not sent either
      if (msg) { msg.textContent = e.message; msg.className = 'err'; }
    }
  }
  S.keysBusy = false;
}

function closeTerm() {
  if (S.typing || S.term) setTyping(false);
  if (!S.term) return;
  S.term.close(); S.term = null;
  const b = document.getElementById('term-toggle'), pre = document.getElementById('term'), t = document.getElementById('term-type');
  if (b) b.textContent = 'Show terminal';
  if (pre) pre.hidden = true;
  if (t) t.hidden = true;
}

// ---- push ----

// Web Push (only when the daemon offers it: the page came over HTTPS): the service
// worker subscribes with the daemon's key and the daemon keeps the subscription for this
// browser's device token. A page opened again subscribes again (the daemon keeps
// subscriptions in memory).
async function setupPush() {
  if (!('serviceWorker' in navigator) || !('PushManager' in window)) return;
  let info;
  try { info = await api('GET', '/v1/push'); } catch (_) { return; }
  if (!info.enabled) return;
  const btn = document.getElementById('push');
  const key = Uint8Array.from(atob(info.key.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  const subscribe = async () => {
    const reg = await navigator.serviceWorker.register('/sw.js');
    let sub = await reg.pushManager.getSubscription();
    if (sub && sub.options && sub.options.applicationServerKey) {
      const old = new Uint8Array(sub.options.applicationServerKey);
      if (old.length !== key.length || old.some((b, i) => b !== key[i])) { await sub.unsubscribe(); sub = null; }
    }
    if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    await api('POST', '/v1/push/subscribe', sub.toJSON());
    btn.hidden = true;
  };
  if (Notification.permission === 'granted') { subscribe().catch(() => {}); return; }
  if (Notification.permission === 'denied') return;
  btn.hidden = false;
  btn.onclick = async () => {
    if (await Notification.requestPermission() === 'granted') subscribe().catch((e) => { btn.title = e.message; });
  };
}

// ---- start ----

async function start() {
  if (location.pathname === '/pair') return pairPage();
  try { S.who = await api('GET', '/v1/whoami'); } catch (e) { return fatal(e); }
  document.getElementById('who').textContent = S.who.subject + ' · ' + (S.who.verbs || []).join(', ');
  setupPush();
  window.addEventListener('hashchange', render);
  connect();
}

start();
