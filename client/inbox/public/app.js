// The inbox page: Preact components written with htm, state in Preact signals. It shows what waits
// for a person, and signs each decision in this browser with the approver's own key before it is sent.
import { h, render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { computed, signal } from '@preact/signals';
import { startAuthentication, startRegistration } from '@simplewebauthn/browser';
import { Validator } from '@cfworker/json-schema';
import { diffJson } from 'diff';
import {
  approvalDigest,
  canonicalJson,
  generateSigningKey,
  importSigningKey,
  loadSigningKey,
  publicEntry,
  saveSigningKey,
  signDecision,
  valueOfShown,
} from './decisions.js';

const html = htm.bind(h);

// The state of the page.
const session = signal(undefined); // { approver, csrfToken, webUiUrl } once known
const snapshot = signal({ items: [], taken: [], approverKeys: null });
const selectedId = signal(undefined);
const signingKey = signal(undefined); // { name, privateKey, publicKey } kept in this browser
const connection = signal('connecting');
const notice = signal(undefined); // { kind: 'ok' | 'error', text }
const selected = computed(() => snapshot.value.items.find((item) => item.id === selectedId.value));

/** The item a notification's link names (`#/item/<workflowId>/<callId>`), until it is listed and chosen. */
function linkedFromHash() {
  const match = /^#\/item\/([^/]+)\/([^/]+)$/.exec(location.hash);
  if (!match) return undefined;
  try {
    return { workflowId: decodeURIComponent(match[1]), callId: decodeURIComponent(match[2]) };
  } catch {
    return undefined;
  }
}
const linkedItem = signal(linkedFromHash());

/** The call id an item's link names: the call's, or `resume:<step>` for a stream cut off. */
function callIdOf(item) {
  return item.kind === 'resume' ? `resume:${item.pending.step}` : item.pending.callId;
}

/** Chooses the item a link named once it is listed (opening it decides nothing). */
function selectLinked() {
  const wanted = linkedItem.value;
  if (!wanted) return;
  const found = snapshot.value.items.find((item) => item.turn.workflowId === wanted.workflowId && callIdOf(item) === wanted.callId);
  if (!found) return;
  selectedId.value = found.id;
  linkedItem.value = undefined;
}
window.addEventListener('hashchange', () => {
  linkedItem.value = linkedFromHash();
  selectLinked();
});

/** A JSON request to the inbox, with the session's CSRF token; the answer's JSON, or an Error with the server's reason. */
async function post(url, body) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-csrf-token': session.value?.csrfToken ?? '' },
    body: JSON.stringify(body ?? {}),
    credentials: 'same-origin',
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error ?? answer.message ?? `the inbox answered ${response.status}`);
  return answer;
}

async function loadSession() {
  const response = await fetch('/api/session', { credentials: 'same-origin' });
  session.value = await response.json();
  if (session.value.approver) await signedIn();
}

async function signedIn() {
  signingKey.value = await loadSigningKey(session.value.approver);
  watchItems();
}

let events;
function watchItems() {
  events?.close();
  events = new EventSource('/api/events');
  events.addEventListener('items', (event) => {
    snapshot.value = JSON.parse(event.data);
    connection.value = 'live';
    selectLinked();
  });
  events.onerror = () => (connection.value = 'reconnecting');
}

async function enroll(token) {
  try {
    const { options } = await post('/api/enroll/options', { token });
    const response = await startRegistration({ optionsJSON: options });
    const answer = await post('/api/enroll/verify', { response });
    session.value = { ...session.value, approver: answer.approver, csrfToken: answer.csrfToken };
    history.replaceState(null, '', '/');
    await signedIn();
  } catch (error) {
    notice.value = { kind: 'error', text: `Enrollment failed: ${error.message}` };
  }
}

async function signIn() {
  try {
    const { options } = await post('/api/sign-in/options');
    const response = await startAuthentication({ optionsJSON: options });
    const answer = await post('/api/sign-in/verify', { response });
    session.value = { ...session.value, approver: answer.approver, csrfToken: answer.csrfToken };
    notice.value = undefined;
    await signedIn();
  } catch (error) {
    notice.value = { kind: 'error', text: `Sign-in failed: ${error.message}` };
  }
}

async function signOut() {
  await post('/api/sign-out').catch(() => undefined);
  events?.close();
  location.assign('/');
}

function ago(iso) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

function until(iso) {
  const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000);
  if (seconds <= 0) return 'now';
  if (seconds < 5400) return `in ${Math.max(1, Math.round(seconds / 60))} min`;
  return `in ${Math.round(seconds / 3600)} h`;
}

/** How a notification went, after its channel's name; one string, so that no line break in the template can drop a space. */
function toldLine(receipt) {
  return `: ${receipt.status} ${ago(receipt.at)} ago${receipt.attempts > 1 ? ` after ${receipt.attempts} attempts` : ''}`;
}

function duration(ms) {
  return ms >= 3_600_000 ? `${ms / 3_600_000} h` : ms >= 60_000 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}

function subjectOf(item) {
  return item.kind === 'resume' ? `step ${item.pending.step + 1}` : item.pending.callId;
}

/** Whether the key kept here may decide on the workers' turns, and what to do when not. */
const keyStatus = computed(() => {
  const keys = snapshot.value.approverKeys;
  const key = signingKey.value;
  if (keys === null) return { canDecide: true, signs: Boolean(key) };
  if (!key) return { canDecide: false, why: 'These turns take only signed decisions, and this browser holds no signing key for you.' };
  if (!keys.includes(key.name)) {
    return { canDecide: false, why: `Your key "${key.name}" is not among the workers' approver keys (${keys.join(', ')}).` };
  }
  return { canDecide: true, signs: true };
});

function KeyPanel() {
  const [entry, setEntry] = useState(undefined);
  const [importing, setImporting] = useState(false);
  const [privateText, setPrivateText] = useState('');
  const [publicText, setPublicText] = useState('');
  const approver = session.value.approver;
  const create = async () => {
    const pair = await generateSigningKey();
    const key = { name: approver, privateKey: pair.privateKey, publicKey: pair.publicKey };
    await saveSigningKey(approver, key);
    signingKey.value = key;
    setEntry(await publicEntry(approver, pair.publicKey));
  };
  const importKey = async (event) => {
    event.preventDefault();
    try {
      const key = await importSigningKey(privateText, publicText);
      if (key.name !== approver) throw new Error(`the key is named "${key.name}"; you are signed in as ${approver}`);
      await saveSigningKey(approver, key);
      signingKey.value = key;
      setEntry(await publicEntry(approver, key.publicKey));
      setImporting(false);
      setPrivateText('');
    } catch (error) {
      notice.value = { kind: 'error', text: `The key could not be imported: ${error.message}` };
    }
  };
  const show = async () => setEntry(await publicEntry(approver, signingKey.value.publicKey));
  return html`<section aria-labelledby="key-heading">
    <h2 id="key-heading">Your signing key</h2>
    ${
      signingKey.value
        ? html`<p>
            This browser signs your decisions with your key <strong>${signingKey.value.name}</strong>; it cannot be read out of it, not even
            by this page. <button class="secondary" onClick=${show}>Show its public entry</button>
          </p>`
        : html`<p>Your decisions are signed in this browser with a key only it holds. Create one, or import the one you were given.</p>
            <div class="actions">
              <button class="primary" onClick=${create}>Create a key in this browser</button>
              <button class="secondary" onClick=${() => setImporting(!importing)} aria-expanded=${importing}>Import a key</button>
            </div>`
    }
    ${
      importing &&
      html`<form onSubmit=${importKey}>
        <label
          >Private entry (name:base64)
          <input type="text" autocomplete="off" value=${privateText} onInput=${(event) => setPrivateText(event.target.value)}
        /></label>
        <label
          >Public entry (name:base64)
          <input type="text" autocomplete="off" value=${publicText} onInput=${(event) => setPublicText(event.target.value)}
        /></label>
        <button class="primary" type="submit">Import</button>
      </form>`
    }
    ${
      entry &&
      html`<p>Give this public entry to whoever runs the workers, for their approver keys (it is not secret):</p>
        <pre data-testid="public-entry">${entry}</pre>`
    }
  </section>`;
}

/**
 * Text as plain runs and marks, by the rule every surface shares (the server sends its pattern):
 * each hidden character is shown as its mark, `\u{202E}`, as the terminal and the Web UI show it.
 */
function partsOf(text) {
  const value = String(text ?? '');
  const pattern = snapshot.value.hiddenPattern;
  if (!pattern) return [value];
  const parts = [];
  let from = 0;
  for (const match of value.matchAll(new RegExp(pattern, 'gu'))) {
    if (match.index > from) parts.push(value.slice(from, match.index));
    const codePoint = match[0].codePointAt(0);
    parts.push({ mark: `\\u{${codePoint.toString(16).toUpperCase()}}`, codePoint });
    from = match.index + match[0].length;
  }
  if (from < value.length) parts.push(value.slice(from));
  return parts;
}

/** Display parts: plain runs as text, each hidden character as a highlighted mark. */
function Parts({ parts }) {
  return parts.map((part) =>
    typeof part === 'string'
      ? part
      : html`<mark class="hidden-char" title=${`hidden character U+${part.codePoint.toString(16).toUpperCase().padStart(4, '0')}`}
          >${part.mark}</mark
        >`,
  );
}

/** Text from a turn (a prompt, the model's text, a reason), its hidden characters marked. */
function Shown({ text }) {
  return html`<${Parts} parts=${partsOf(text)} />`;
}

/**
 * An argument value as the server's display of it says (common/display-text.ts): never cut; long
 * texts and objects of many fields folded, each fold named so the page knows when all were shown.
 */
function Value({ node, name }) {
  const label = name ? html`<span class="key"><${Parts} parts=${name} /></span>: ` : '';
  switch (node.kind) {
    case 'json':
      return node.inline ? html`<code><${Parts} parts=${node.parts} /></code>` : html`<pre><${Parts} parts=${node.parts} /></pre>`;
    case 'text':
      return html`<details data-fold=${node.fold}>
        <summary>${label}${node.length} characters (unfold)</summary>
        <pre><${Parts} parts=${node.parts} /></pre>
      </details>`;
    case 'list':
    case 'fields': {
      const entries =
        node.kind === 'list'
          ? node.items.map((item, index) => [[String(index)], item])
          : node.fields.map((field) => [field.key, field.value]);
      return html`<details open=${node.fold === undefined} data-fold=${node.fold}>
        <summary>
          ${node.kind === 'list' ? `${entries.length} items` : `${entries.length} fields`}${node.fold === undefined ? '' : ' (unfold)'}
        </summary>
        <ul>
          ${entries.map(
            ([key, item]) =>
              html`<li>
                <span class="key"><${Parts} parts=${key} /></span>: <${Value} node=${item} name=${key} />
              </li>`,
          )}
        </ul>
      </details>`;
    }
    default:
      return html`<strong class="errors">nested deeper than ${node.depth} levels: not shown here</strong>`;
  }
}

/**
 * The arguments, with how much of them was shown: a fold counts as shown once it is open with every
 * fold around it open too. `onShown` hears each fold as it comes into view.
 */
function Arguments({ display, shown, onShown }) {
  const container = useRef(undefined);
  const look = () => {
    const open = [...container.current.querySelectorAll('details[data-fold][open]')].filter(
      (element) => !element.parentElement.closest('details:not([open])'),
    );
    onShown(open.map((element) => element.dataset.fold));
  };
  const unfoldAll = () => {
    for (const element of container.current.querySelectorAll('details')) element.open = true;
  };
  const total = display.folds.length;
  const seen = display.folds.filter((fold) => shown.has(fold)).length;
  return html`<div>
    ${display.warning && html`<p class="warning" role="note" data-testid="hidden-warning">${display.warning}</p>`}
    <div class="args" data-testid="arguments" ref=${container} onToggleCapture=${look}>
      <${Value} node=${display.root} />
    </div>
    ${
      !display.complete
        ? html`<p class="errors" data-testid="unfold-status">
            Part of these arguments is nested too deeply to be shown here, so the call cannot be approved from this page: see them whole
            with tollgate approve --all.
          </p>`
        : total > 0 &&
          html`<p class=${seen === total ? 'muted' : 'warning'} data-testid="unfold-status">
            ${
              seen === total
                ? `All ${total} folded part${total === 1 ? ' was' : 's were'} unfolded: everything was shown.`
                : `${seen} of ${total} folded part${total === 1 ? '' : 's'} unfolded. A call is decided only from a whole view: unfold every part to enable Approve.`
            }
            ${seen < total && html` <button class="secondary" onClick=${unfoldAll}>Unfold everything</button>`}
          </p>`
    }
  </div>`;
}

/** Whether every part of the arguments was shown on the page: nothing folded is left unopened, nothing too deep. */
function wholyShown(display, shown) {
  return display.complete && display.folds.every((fold) => shown.has(fold));
}

/** The digest of what this page rendered of a call: it must be the one the call waits under, or the page sends nothing. */
async function shownDigestMatches(item) {
  try {
    const digest = await approvalDigest(valueOfShown(item.display.root), item.pending.definitionDigest);
    return { computed: digest, matches: digest === (item.pending.shownDigest ?? item.pending.argsDigest) };
  } catch {
    return { computed: undefined, matches: false };
  }
}

/** Signs (when a key is here) and sends one decision; the page says what the turn answered. */
async function send(kind, item, decision, signedFields) {
  const approver = session.value.approver;
  let body = decision;
  const key = signingKey.value;
  if (key) {
    const signedAt = new Date().toISOString();
    const fields = { ...signedFields, approver: key.name, signedAt, workflowId: item.turn.workflowId };
    if (item.pending.round > 1) fields.round = item.pending.round;
    body = { ...decision, keyId: key.name, signedAt, signature: await signDecision(fields, key.privateKey) };
  }
  if (item.pending.round > 1) body.round = item.pending.round;
  try {
    await post('/api/decide', { kind, workflowId: item.turn.workflowId, decision: body });
    notice.value = { kind: 'ok', text: `Sent: ${decision.decision ?? decision.outcome} on ${subjectOf(item)} as ${approver}.` };
    selectedId.value = undefined;
  } catch (error) {
    notice.value = { kind: 'error', text: error.message };
  }
}

function ApprovalActions({ item, digest, allShown }) {
  const [reason, setReason] = useState('');
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(() => item.display.editText);
  const [grantHours, setGrantHours] = useState('0');
  const [grantWhen, setGrantWhen] = useState('');
  const approver = session.value.approver;
  const { canDecide } = keyStatus.value;
  const disabled = !canDecide || !digest?.matches || item.pending.redactedValues !== undefined;
  // Approving (as it is or edited) needs the whole arguments shown; a denial runs nothing, so it does not.
  const approveDisabled = disabled || !allShown;
  let edited;
  let errors = [];
  if (editing) {
    try {
      edited = JSON.parse(text);
      const schema = item.tool?.jsonSchema;
      if (schema) {
        const draft = String(schema.$schema ?? '').includes('2020-12')
          ? '2020-12'
          : String(schema.$schema ?? '').includes('2019-09')
            ? '2019-09'
            : '7';
        const result = new Validator(schema, draft, false).validate(edited);
        errors = result.valid ? [] : result.errors.map((error) => `${error.instanceLocation}: ${error.error}`);
      }
    } catch (error) {
      errors = [`not JSON: ${error.message}`];
    }
  }
  const unchanged = edited !== undefined && canonicalJson(edited) === canonicalJson(item.pending.args);
  // A grant given with the approval: later calls of this tool in this task, matching the condition, for that long.
  let grant;
  let grantError;
  if (grantHours !== '0') {
    grant = { forMs: Number(grantHours) * 3_600_000 };
    if (grantWhen.trim() !== '') {
      try {
        grant.when = JSON.parse(grantWhen);
        if (!grant.when || typeof grant.when !== 'object' || Array.isArray(grant.when))
          grantError = 'the condition must be a JSON Schema object';
      } catch (error) {
        grantError = `the condition is not JSON: ${error.message}`;
      }
    }
  }
  const decide = async (verdict, args) => {
    const fields = { callId: item.pending.callId, decision: verdict, argsDigest: digest.computed };
    const decision = { callId: item.pending.callId, decision: verdict, approver, argsDigest: digest.computed };
    if (verdict === 'deny' && reason) decision.reason = reason;
    if (args !== undefined) {
      decision.args = args;
      fields.editedArgsDigest = await approvalDigest(args, item.pending.definitionDigest);
    }
    if (verdict === 'approve' && grant) {
      decision.grant = grant;
      fields.grant = canonicalJson(grant);
    }
    await send('approval', item, decision, fields);
  };
  return html`<div>
    <div class="actions">
      <button class="primary" disabled=${approveDisabled || grantError !== undefined} onClick=${() => decide('approve')}>Approve</button>
      <label>Reason for a denial <input type="text" value=${reason} onInput=${(event) => setReason(event.target.value)} /></label>
      <button class="danger" disabled=${disabled} onClick=${() => decide('deny')}>Deny</button>
      <button class="secondary" disabled=${disabled || !item.tool} aria-expanded=${editing} onClick=${() => setEditing(!editing)}>
        Edit the arguments
      </button>
    </div>
    <div class="actions">
      <label
        >With the approval, also approve later calls of ${item.pending.tool} in this task for
        <select value=${grantHours} onChange=${(event) => setGrantHours(event.target.value)}>
          <option value="0">no, ask each time</option>
          <option value="1">1 hour</option>
          <option value="8">8 hours</option>
          <option value="24">24 hours</option>
        </select></label
      >
      ${
        grantHours !== '0' &&
        html`<label
          >Only calls whose arguments match (a JSON Schema; empty: any arguments)
          <input type="text" value=${grantWhen} onInput=${(event) => setGrantWhen(event.target.value)}
        /></label>`
      }
      ${grantError && html`<p class="errors" data-testid="grant-error">${grantError}</p>`}
    </div>
    ${
      editing &&
      html`<section aria-labelledby="edit-heading">
        <h3 id="edit-heading">Edited arguments</h3>
        <label for="edit-arguments"
          >The arguments the call is to run with instead (JSON, checked against the tool's schema as you type)</label
        >
        <textarea id="edit-arguments" spellcheck="false" value=${text} onInput=${(event) => setText(event.target.value)}></textarea>
        ${
          errors.length > 0
            ? html`<ul class="errors" role="alert" data-testid="edit-errors">
                ${errors.map((error) => html`<li>${error}</li>`)}
              </ul>`
            : html`<p class="muted">The edit fits the tool's schema.</p>`
        }
        ${
          edited !== undefined &&
          partsOf(JSON.stringify(edited)).some((part) => typeof part !== 'string') &&
          html`<p class="warning" role="note" data-testid="edit-hidden-warning">
            The edited arguments hold hidden characters (marked \\u{…} in the changes below): they run as marked.
          </p>`
        }
        ${
          edited !== undefined &&
          errors.length === 0 &&
          !unchanged &&
          html`<h4>What changes</h4>
            <${Diff} before=${item.pending.args} after=${edited} />`
        }
        <button
          class="primary"
          disabled=${approveDisabled || errors.length > 0 || unchanged || edited === undefined}
          onClick=${() => decide('approve', edited)}
        >
          Approve with these arguments
        </button>
      </section>`
    }
  </div>`;
}

function Diff({ before, after }) {
  const parts = diffJson(before, after);
  return html`<pre class="diff" data-testid="edit-diff">
${parts.map(
      (part) =>
        html`<span class=${part.added ? 'added' : part.removed ? 'removed' : ''}
          >${part.added ? '+ ' : part.removed ? '- ' : ''}<${Shown} text=${part.value}
        /></span>`,
    )}</pre>`;
}

function ResolutionActions({ item, digest, allShown }) {
  const [note, setNote] = useState('');
  const { canDecide } = keyStatus.value;
  // "Not applied" lets the call run again: it is said only of arguments shown whole, as an approval is.
  const disabled = !canDecide || !digest?.matches || !allShown;
  const resolve = (outcome) => {
    const decision = { callId: item.pending.callId, outcome, argsDigest: digest.computed, resolver: session.value.approver };
    if (note) decision.note = note;
    return send('resolution', item, decision, { callId: item.pending.callId, decision: outcome, argsDigest: digest.computed });
  };
  return html`<div class="actions">
    <label>Note <input type="text" value=${note} onInput=${(event) => setNote(event.target.value)} /></label>
    <button class="primary" disabled=${disabled} onClick=${() => resolve('applied')}>It took effect (applied)</button>
    <button class="secondary" disabled=${disabled} onClick=${() => resolve('not_applied')}>It did not (not applied)</button>
  </div>`;
}

function ResumeActions({ item }) {
  const { canDecide } = keyStatus.value;
  const decide = (verdict) =>
    send(
      'resume',
      item,
      { step: item.pending.step, decision: verdict, by: session.value.approver },
      { callId: `resume:${item.pending.step}`, argsDigest: '', decision: verdict },
    );
  return html`<div class="actions">
    <button class="primary" disabled=${!canDecide} onClick=${() => decide('retry')}>Ask the model again</button>
    <button class="danger" disabled=${!canDecide} onClick=${() => decide('stop')}>Stop the turn</button>
  </div>`;
}

/** What the workers do with a call of this tool when an attempt fails, as its effect says (an irreversible write never runs again by itself). */
function retryPolicy(tool) {
  const attempts = `${tool.maxAttempts} attempt${tool.maxAttempts === 1 ? '' : 's'} at most`;
  if (tool.effect === 'irreversible_write') return 'runs once, never again by itself: an unknown outcome is asked of a person';
  if (tool.effect === 'reversible_write') return `runs again only after its status check finds it did not apply, ${attempts}`;
  return attempts;
}

function Detail({ item }) {
  const [digest, setDigest] = useState(undefined);
  const [shown, setShown] = useState(() => new Set());
  useEffect(() => {
    if (item.kind === 'resume') return undefined;
    let current = true;
    shownDigestMatches(item).then((found) => current && setDigest(found));
    return () => (current = false);
  }, [item.id]);
  const onShown = (folds) => setShown((before) => (folds.every((fold) => before.has(fold)) ? before : new Set([...before, ...folds])));
  const allShown = item.kind !== 'resume' && wholyShown(item.display, shown);
  const { pending, tool, turn } = item;
  return html`<article aria-labelledby="detail-heading">
    <h2 id="detail-heading">
      ${item.kind === 'resume' ? `Model stream cut off at step ${pending.step + 1}` : `${pending.tool}: ${item.kind === 'approval' ? 'waits for approval' : 'outcome unknown'}`}
    </h2>
    <dl class="facts">
      <dt>Task</dt>
      <dd>${turn.taskId}</dd>
      <dt>Turn</dt>
      <dd><a href=${turn.webUiLink} target="_blank" rel="noopener noreferrer">${turn.workflowId} in the Temporal Web UI</a></dd>
      ${
        turn.lineage &&
        html`<dt>Subagent</dt>
          <dd data-testid="lineage">
            <${Shown} text=${turn.lineage.path.join(' → ')} /> (depth ${String(turn.lineage.depth)}), below the root turn
            <code><${Shown} text=${turn.lineage.rootWorkflowId} /></code>; the decision goes to this subagent's turn
          </dd>
          <dt>Its parent asked</dt>
          <dd>
            <pre data-testid="lineage-request"><${Shown} text=${turn.lineage.request} /></pre>
          </dd>`
      }
      <dt>Waiting for</dt>
      <dd>${ago(pending.requestedAt ?? pending.since)}; it expires ${until(pending.expiresAt)} (${pending.expiresAt})</dd>
      ${
        pending.round > 1 &&
        html`<dt>Wait</dt>
          <dd>round ${pending.round} of this ${item.kind === 'resume' ? 'step' : 'call'}</dd>`
      }
      ${
        tool &&
        html`<dt>Tool</dt>
          <dd>${tool.name}: <${Shown} text=${tool.description} /></dd>
          <dt>Effect</dt>
          <dd>${tool.effectLabel}</dd>
          <dt>Policy</dt>
          <dd>runs for at most ${duration(tool.timeoutMs)}, ${retryPolicy(tool)}; an approval waits ${duration(tool.approvalTimeoutMs)}</dd>
          <dt>Who may decide</dt>
          <dd>${tool.approvers ? tool.approvers.join(', ') : 'any approver'}</dd>`
      }
      ${
        pending.policyNote &&
        html`<dt>Why no rule decided</dt>
          <dd data-testid="policy-note"><${Shown} text=${pending.policyNote} /></dd>`
      }
      ${
        pending.escalatedTo &&
        html`<dt>Escalated</dt>
          <dd data-testid="escalated">to ${pending.escalatedTo}, whose members may decide too</dd>`
      }
      ${
        item.toolChanged &&
        html`<dt>Note</dt>
          <dd class="errors">The workers now declare this tool differently than when the call was checked.</dd>`
      }
    </dl>
    ${
      pending.notifications?.length > 0 &&
      html`<h3>Who was told</h3>
        <ul data-testid="notifications">
          ${pending.notifications.map(
            (receipt) =>
              html`<li key=${receipt.id}>
                ${receipt.kind ?? 'notice'} to <strong><${Shown} text=${receipt.channel} /></strong>${toldLine(receipt)}${
                  receipt.error ? html`: <span class="errors"><${Shown} text=${receipt.error} /></span>` : ''
                }
              </li>`,
          )}
        </ul>`
    }
    <h3>The request</h3>
    <pre><${Shown} text=${turn.prompt} /></pre>
    ${
      turn.decided.length > 0 &&
      html`<h3>Decided earlier in this turn</h3>
        <ul data-testid="decided">
          ${turn.decided.map(
            (entry) =>
              html`<li key=${entry.callId}>
                ${entry.tool} (${entry.callId}): ${entry.decision === 'approve' ? 'approved' : 'denied'} by <strong>${entry.by}</strong>
              </li>`,
          )}
        </ul>`
    }
    ${
      turn.modelText &&
      html`<h3>What the model said so far</h3>
        <pre><${Shown} text=${turn.modelText} /></pre>`
    }
    ${
      item.kind === 'resume'
        ? html`<h3>The text that had streamed (${pending.chunks} chunks)</h3>
            <pre data-testid="partial-text"><${Shown} text=${pending.partialText} /></pre>`
        : html`<h3>Arguments</h3>
            ${
              pending.redactedValues !== undefined &&
              html`<p class="errors">
                ${pending.redactedValues} value(s) are hidden because they hold secrets; approve such a call where its arguments can be seen
                whole.
              </p>`
            }
            <${Arguments} display=${item.display} shown=${shown} onShown=${onShown} />
            <p>
              Digest <code data-testid="digest">${pending.shownDigest ?? pending.argsDigest}</code>
              ${digest === undefined ? ' (checking…)' : digest.matches ? ' — matches what is shown here' : html` <strong class="errors">does not match what is shown here: nothing can be sent</strong>`}
            </p>`
    }
    ${
      item.kind === 'resolution' &&
      html`<h3>What the status check found</h3>
        <p><${Shown} text=${pending.reason} /></p>`
    }
    ${keyStatus.value.why && html`<p class="errors">${keyStatus.value.why}</p>`}
    ${item.kind === 'approval' && html`<${ApprovalActions} item=${item} digest=${digest} allShown=${allShown} key=${item.id} />`}
    ${item.kind === 'resolution' && html`<${ResolutionActions} item=${item} digest=${digest} allShown=${allShown} key=${item.id} />`}
    ${item.kind === 'resume' && html`<${ResumeActions} item=${item} key=${item.id} />`}
  </article>`;
}

function Inbox() {
  const { items, taken, approverKeys, problem } = snapshot.value;
  const current = selected.value;
  const lost = selectedId.value && !current ? snapshot.value.taken.find((entry) => entry.id === selectedId.value) : undefined;
  return html`<div>
    ${
      approverKeys === null &&
      html`<p class="banner" role="note">
        These workers take <strong>unsigned</strong> decisions: anyone who can reach Temporal may decide, and who decided is only what the
        decision says. Configure approver keys (approvals.publicKeysEnv) so that only signed decisions count.
      </p>`
    }
    ${problem && html`<p class="banner" role="alert">${problem}</p>`}
    ${notice.value && html`<p class=${`notice ${notice.value.kind}`} role=${notice.value.kind === 'error' ? 'alert' : 'status'}>${notice.value.text}</p>`}
    <div class="layout">
      <section aria-labelledby="list-heading">
        <h2 id="list-heading">Waiting for you (${items.length})</h2>
        <p class="muted" aria-live="polite">${connection.value === 'live' ? 'Updates by itself.' : 'Reconnecting…'}</p>
        ${items.length === 0 && html`<p>Nothing waits for a person.</p>`}
        <ul class="items">
          ${items.map(
            (item) =>
              html`<li>
                <button
                  aria-current=${item.id === selectedId.value ? 'true' : 'false'}
                  data-item=${item.id}
                  onClick=${() => ((selectedId.value = item.id), (notice.value = undefined))}
                >
                  <span class="kind">${item.kind}</span><br />
                  <strong>${item.kind === 'resume' ? 'model stream' : item.pending.tool}</strong>${' · '}<${Shown}
                    text=${item.turn.taskId}
                  />
                  ${item.turn.lineage && html` · subagent <${Shown} text=${item.turn.lineage.path.join(' → ')} />`}
                  ${item.display?.warning && html` <span class="warning-badge">hidden characters</span>`}<br />
                  <span class="muted"
                    >waiting ${ago(item.pending.requestedAt ?? item.pending.since)}, expires ${until(item.pending.expiresAt)}</span
                  >
                </button>
              </li>`,
          )}
        </ul>
        ${
          taken.length > 0 &&
          html`<h2>Lately decided</h2>
            <ul data-testid="taken">
              ${taken.map(
                (entry) =>
                  html`<li>
                    ${entry.kind} ${entry.subject} of ${entry.workflowId}:
                    <strong>${entry.outcome}</strong>${entry.by ? ` by ${entry.by}` : ''}
                  </li>`,
              )}
            </ul>`
        }
        <${KeyPanel} />
      </section>
      <section aria-live="polite">
        ${
          current
            ? html`<${Detail} item=${current} key=${current.id} />`
            : lost
              ? html`<p class="notice error" role="alert" data-testid="taken-notice">
                  This ${lost.kind} was decided meanwhile: <strong>${lost.outcome}</strong>${lost.by ? ` by ${lost.by}` : ''}. Nothing was
                  sent from here.
                </p>`
              : html`<p class="muted">Choose an item to see what it would do.</p>`
        }
      </section>
    </div>
  </div>`;
}

function SignIn() {
  const token = location.pathname === '/enroll' ? location.hash.slice(1) : '';
  return html`<section>
    ${notice.value && html`<p class=${`notice ${notice.value.kind}`} role="alert">${notice.value.text}</p>`}
    ${
      token
        ? html`<p>
              This link enrolls a passkey for you: your device (a security key, a phone, the computer's own) will ask to create one for this
              inbox.
            </p>
            <button class="primary" onClick=${() => enroll(token)}>Create my passkey</button>`
        : html`<p>The inbox shows what waits for a decision. Sign in with the passkey you enrolled.</p>
            <button class="primary" onClick=${signIn}>Sign in with a passkey</button>`
    }
  </section>`;
}

function App() {
  if (session.value === undefined) return html`<p>Loading the inbox…</p>`;
  const approver = session.value.approver;
  return html`<div>
    <header>
      <h1>Tollgate inbox</h1>
      ${
        approver &&
        html`<span>Signed in as <strong data-testid="approver">${approver}</strong></span
          ><button class="secondary" onClick=${signOut}>Sign out</button>`
      }
    </header>
    ${approver ? html`<${Inbox} />` : html`<${SignIn} />`}
  </div>`;
}

render(html`<${App} />`, document.getElementById('app'));
loadSession().catch((error) => (notice.value = { kind: 'error', text: `The inbox could not be reached: ${error.message}` }));
