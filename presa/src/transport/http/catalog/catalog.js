// The catalog page's script: a 2026-07-28 client of the endpoint this page is served
// beside. It reads `server/discover` and the four listings, shows every item, builds a
// form from each tool's input schema, and calls the endpoint with `fetch`: every request
// carries the `_meta` and the headers the wire asks for (MCP-Protocol-Version,
// Mcp-Method, Mcp-Name, Mcp-Param-* for arguments mirrored into headers). Answers that
// come as event streams are read as they arrive. Input requests (multi round-trip) are
// shown as forms and answered by the retry round.
//
// Server data reaches the page only as text nodes and attribute values set through the
// DOM (never as HTML), and the Content-Security-Policy allows no inline script.
'use strict';

(() => {
  const PROTOCOL = '2026-07-28';
  // The endpoint, named by the page relative to itself (so a router nested under a
  // prefix finds it too).
  const ENDPOINT = new URL(document.querySelector('meta[name="mcp-endpoint"]').content, location.href).pathname;
  const CLIENT = { name: 'presa-catalog', version: '1' };
  const CAPABILITIES = { elicitation: {} };
  let nextId = 1;
  let nextProgress = 1;

  // --- DOM helpers: text only ---------------------------------------------------------

  // An element with attributes (`on*` keys become listeners; `class`, `data-*` and the
  // rest attributes) and children (strings become text nodes; null is skipped).
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked') el.checked = !!v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  function json(v) {
    return JSON.stringify(v, null, 2);
  }

  function pre(text, cls) {
    return h('pre', { class: cls }, text);
  }

  function status(text, bad) {
    const el = document.getElementById('status');
    el.textContent = text;
    el.className = bad ? 'bad' : '';
  }

  // --- the wire -------------------------------------------------------------------------

  // A header value as the wire carries it: plain when printable ASCII without surrounding
  // whitespace, else `=?base64?…?=` of its UTF-8.
  function headerValue(s) {
    if (/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(s)) return s;
    const bytes = new TextEncoder().encode(s);
    let bin = '';
    for (const b of bytes) bin += String.fromCharCode(b);
    return '=?base64?' + btoa(bin) + '?=';
  }

  // The Mcp-Param-* headers of a tool call: each top-level property annotated
  // `x-mcp-header` whose argument is a string, an integer or a boolean.
  function paramHeaders(tool, args) {
    const out = {};
    const props = (tool && tool.inputSchema && tool.inputSchema.properties) || {};
    for (const [key, schema] of Object.entries(props)) {
      const name = schema && schema['x-mcp-header'];
      const v = args ? args[key] : undefined;
      if (typeof name !== 'string' || v === undefined || v === null) continue;
      if (typeof v === 'string') out['Mcp-Param-' + name] = headerValue(v);
      else if (typeof v === 'boolean' || Number.isInteger(v)) out['Mcp-Param-' + name] = String(v);
    }
    return out;
  }

  function meta(progressToken) {
    const m = {
      'io.modelcontextprotocol/protocolVersion': PROTOCOL,
      'io.modelcontextprotocol/clientCapabilities': CAPABILITIES,
      'io.modelcontextprotocol/clientInfo': CLIENT,
      'io.modelcontextprotocol/logLevel': 'debug',
    };
    if (progressToken !== undefined) m.progressToken = progressToken;
    return m;
  }

  // Sends one request; `onNote` sees each notification of an event-stream answer as it
  // arrives. Resolves to { request, headers, status, raw, response } (response: the
  // JSON-RPC response, or null when there was none).
  async function rpc(method, params, extraHeaders, onNote) {
    const id = nextId++;
    const body = { jsonrpc: '2.0', id, method, params };
    const headers = {
      'Content-Type': 'application/json',
      'Accept': 'application/json, text/event-stream',
      'MCP-Protocol-Version': PROTOCOL,
      'Mcp-Method': method,
    };
    if (method === 'tools/call' || method === 'prompts/get') headers['Mcp-Name'] = headerValue(params.name);
    if (method === 'resources/read') headers['Mcp-Name'] = headerValue(params.uri);
    Object.assign(headers, extraHeaders || {});
    const token = document.getElementById('token').value.trim();
    const shown = Object.assign({}, headers);
    if (token) {
      headers['Authorization'] = 'Bearer ' + token;
      shown['Authorization'] = 'Bearer …';
    }
    const text = JSON.stringify(body);
    const exchange = { request: 'POST ' + ENDPOINT + '\n' + Object.entries(shown).map(([k, v]) => k + ': ' + v).join('\n') + '\n\n' + json(body), status: 0, raw: '', response: null };
    let resp;
    try {
      resp = await fetch(ENDPOINT, { method: 'POST', headers, body: text, credentials: 'omit', cache: 'no-store' });
    } catch (e) {
      exchange.raw = String(e);
      return exchange;
    }
    exchange.status = resp.status;
    const head = 'HTTP ' + resp.status + '\ncontent-type: ' + (resp.headers.get('content-type') || '') + '\n\n';
    const kind = resp.headers.get('content-type') || '';
    if (kind.startsWith('text/event-stream') && resp.body) {
      exchange.raw = head;
      await readEvents(resp.body, (data) => {
        exchange.raw += 'data: ' + data + '\n\n';
        let msg;
        try { msg = JSON.parse(data); } catch (_) { return; }
        if (msg && msg.id === id && !('method' in msg)) exchange.response = msg;
        else if (msg && typeof msg.method === 'string' && onNote) onNote(msg);
      });
    } else {
      const raw = await resp.text();
      exchange.raw = head + raw;
      try { exchange.response = raw ? JSON.parse(raw) : null; } catch (_) { exchange.response = null; }
    }
    return exchange;
  }

  // Reads a `text/event-stream` body as it comes, calling `onData` with the data of each
  // event (its `data:` lines joined with newlines).
  async function readEvents(stream, onData) {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let data = [];
    const line = (l) => {
      if (l === '') {
        if (data.length) onData(data.join('\n'));
        data = [];
      } else if (l.startsWith('data:')) {
        data.push(l.slice(5).replace(/^ /, ''));
      }
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let at;
      while ((at = buf.search(/\r\n|\r|\n/)) >= 0) {
        const l = buf.slice(0, at);
        buf = buf.slice(at + (buf.startsWith('\r\n', at) ? 2 : 1));
        line(l);
      }
    }
    buf += decoder.decode();
    if (buf) line(buf);
    line('');
  }

  // Calls a method and follows its pagination to the end, gathering `key`.
  async function listAll(method, key) {
    const items = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
      const params = { _meta: meta() };
      if (cursor) params.cursor = cursor;
      const ex = await rpc(method, params);
      const r = ex.response;
      if (!r || r.error || !r.result) throw new Error(method + ': ' + (r && r.error ? r.error.message : 'HTTP ' + ex.status));
      items.push(...(r.result[key] || []));
      cursor = r.result.nextCursor;
      if (!cursor) break;
    }
    return items;
  }

  // --- JSON Schema to form ----------------------------------------------------------------

  // Follows a local `$ref` (`#/$defs/x`, any JSON pointer into the root).
  function deref(schema, root, depth) {
    let s = schema;
    for (let i = 0; s && typeof s === 'object' && typeof s.$ref === 'string' && i < 16; i++) {
      const ref = s.$ref;
      if (!ref.startsWith('#')) return s;
      let target = root;
      for (const part of ref.slice(1).split('/').filter(Boolean)) {
        const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
        target = target && typeof target === 'object' ? target[key] : undefined;
      }
      if (!target) return s;
      const rest = Object.assign({}, s);
      delete rest.$ref;
      s = Object.assign({}, target, rest);
    }
    return depth > 12 ? {} : s;
  }

  // The shape a schema is edited as: 'enum', 'string', 'number', 'integer', 'boolean',
  // 'array', 'object' or 'json' (a text area of JSON), and whether it admits null.
  function shape(schema, root, depth) {
    let s = deref(schema, root, depth);
    // A boolean schema (`true`: anything) has no shape to build a form from.
    if (!s || typeof s !== 'object' || Array.isArray(s)) s = {};
    let nullable = false;
    // `anyOf`/`oneOf` of one schema and null (an optional struct or enum).
    for (const k of ['anyOf', 'oneOf']) {
      if (Array.isArray(s[k])) {
        const rest = s[k].filter((b) => !(b && b.type === 'null'));
        if (rest.length === 1 && rest.length < s[k].length) {
          nullable = true;
          const outer = Object.assign({}, s);
          delete outer[k];
          s = Object.assign({}, deref(rest[0], root, depth), outer);
        }
      }
    }
    // `oneOf` of constants (an enum whose variants carry descriptions).
    if (Array.isArray(s.oneOf) && s.oneOf.length && s.oneOf.every((b) => b && 'const' in b)) {
      return { s, nullable, kind: 'enum', options: s.oneOf.map((b) => ({ value: b.const, label: b.title || b.description })) };
    }
    if (Array.isArray(s.enum)) {
      const options = s.enum.filter((v) => v !== null).map((v) => ({ value: v }));
      return { s, nullable: nullable || s.enum.includes(null), kind: 'enum', options };
    }
    if ('const' in s) return { s, nullable, kind: 'enum', options: [{ value: s.const }] };
    let type = s.type;
    if (Array.isArray(type)) {
      const rest = type.filter((t) => t !== 'null');
      nullable = nullable || rest.length < type.length;
      type = rest.length === 1 ? rest[0] : undefined;
    }
    if (!type && s.properties) type = 'object';
    if (['string', 'number', 'integer', 'boolean'].includes(type)) return { s, nullable, kind: type };
    if (type === 'array' && s.items && typeof s.items === 'object' && !Array.isArray(s.items)) return { s, nullable, kind: 'array' };
    if (type === 'object' && s.properties && typeof s.properties === 'object') return { s, nullable, kind: 'object' };
    return { s, nullable, kind: 'json' };
  }

  // Builds the editor of one value: { el, get } where `get()` returns the value, or
  // undefined when nothing is given (an optional field left empty). `path` names the
  // field in `data-field` (dot-separated; rows of an array by index).
  function editor(schema, root, path, required, depth) {
    const sh = shape(schema, root, depth);
    const s = sh.s;
    const hasDefault = Object.prototype.hasOwnProperty.call(s, 'default');
    const attrs = { 'data-field': path, 'data-kind': sh.kind };
    switch (sh.kind) {
      case 'enum': {
        const sel = h('select', attrs);
        if (!required || sh.nullable) sel.append(h('option', { value: '' }, '—'));
        sh.options.forEach((o, i) => {
          const label = JSON.stringify(o.value) + (o.label ? ' — ' + o.label : '');
          sel.append(h('option', { value: String(i) }, typeof o.value === 'string' && !o.label ? o.value : label));
        });
        if (hasDefault) {
          const i = sh.options.findIndex((o) => JSON.stringify(o.value) === JSON.stringify(s.default));
          if (i >= 0) sel.value = String(i);
        }
        return { el: sel, get: () => (sel.value === '' ? undefined : sh.options[Number(sel.value)].value) };
      }
      case 'string': {
        const input = h('input', Object.assign({ type: 'text', spellcheck: 'false' }, attrs));
        if (hasDefault && typeof s.default === 'string') input.value = s.default;
        if (s.format) input.placeholder = s.format;
        return { el: input, get: () => (input.value === '' && !required ? undefined : input.value) };
      }
      case 'number':
      case 'integer': {
        const input = h('input', Object.assign({ type: 'number', step: sh.kind === 'integer' ? '1' : 'any' }, attrs));
        if (typeof s.minimum === 'number') input.min = String(s.minimum);
        if (typeof s.maximum === 'number') input.max = String(s.maximum);
        if (hasDefault && typeof s.default === 'number') input.value = String(s.default);
        return { el: input, get: () => (input.value === '' ? undefined : Number(input.value)) };
      }
      case 'boolean': {
        if (required && !sh.nullable) {
          const box = h('input', Object.assign({ type: 'checkbox' }, attrs));
          box.checked = s.default === true;
          return { el: box, get: () => box.checked };
        }
        // An optional boolean has three states: absent, true, false.
        const sel = h('select', attrs, h('option', { value: '' }, '—'), h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
        if (typeof s.default === 'boolean') sel.value = String(s.default);
        return { el: sel, get: () => (sel.value === '' ? undefined : sel.value === 'true') };
      }
      case 'array': {
        const rows = h('div', { class: 'rows' });
        const editors = [];
        const box = h('div', attrs, rows);
        const add = (value) => {
          const ed = editor(s.items, root, path + '.' + editors.length, true, depth + 1);
          if (value !== undefined) setValue(ed, value);
          const row = h('div', { class: 'row' }, ed.el);
          const entry = { ed, row };
          row.append(h('button', { type: 'button', class: 'remove', onclick: () => { editors.splice(editors.indexOf(entry), 1); row.remove(); } }, 'Remove'));
          editors.push(entry);
          rows.append(row);
        };
        box.append(h('button', { type: 'button', class: 'add', 'data-add': path, onclick: () => add() }, 'Add'));
        if (hasDefault && Array.isArray(s.default)) s.default.forEach((v) => add(v));
        return {
          el: box,
          get: () => {
            const out = editors.map((e) => e.ed.get()).filter((v) => v !== undefined);
            return out.length === 0 && !required && !hasDefault ? undefined : out;
          },
        };
      }
      case 'object': {
        const need = new Set(Array.isArray(s.required) ? s.required : []);
        const fields = [];
        const set = h('fieldset', attrs);
        if (path) set.append(h('legend', {}, path.split('.').pop()));
        for (const [key, sub] of Object.entries(s.properties)) {
          const subPath = path ? path + '.' + key : key;
          const ed = editor(sub, root, subPath, need.has(key), depth + 1);
          const subS = (sub && typeof sub === 'object' && deref(sub, root, depth + 1)) || {};
          if (hasDefault && s.default && typeof s.default === 'object' && key in s.default) setValue(ed, s.default[key]);
          set.append(h('div', { class: 'field' },
            h('span', { class: 'label' }, key, need.has(key) ? h('span', { class: 'req', title: 'required' }, '*') : null),
            h('div', {}, ed.el, subS.description ? h('div', { class: 'hint' }, subS.description) : null)));
          fields.push([key, ed]);
        }
        return {
          el: set,
          get: () => {
            const out = {};
            for (const [k, ed] of fields) {
              const v = ed.get();
              if (v !== undefined) out[k] = v;
            }
            return Object.keys(out).length === 0 && !required && path ? undefined : out;
          },
        };
      }
      default: {
        const area = h('textarea', Object.assign({ spellcheck: 'false', placeholder: 'JSON' }, attrs));
        if (hasDefault) area.value = JSON.stringify(s.default);
        return {
          el: area,
          get: () => {
            if (area.value.trim() === '') return undefined;
            try { return JSON.parse(area.value); } catch (e) { throw new Error(path + ': ' + e.message); }
          },
        };
      }
    }
  }

  // Puts a default value into an editor built without one (array rows, nested defaults).
  function setValue(ed, value) {
    const el = ed.el;
    if (el.tagName === 'INPUT' && el.type === 'checkbox') el.checked = value === true;
    else if (el.tagName === 'INPUT') el.value = String(value);
    else if (el.tagName === 'TEXTAREA') el.value = JSON.stringify(value);
    else if (el.tagName === 'SELECT') {
      for (const o of el.options) {
        if (o.textContent === String(value) || o.value === String(value)) { el.value = o.value; break; }
      }
    }
  }

  // The form of an object schema (a tool's arguments, an elicitation's content).
  function objectForm(schema) {
    const root = schema || {};
    const s = Object.assign({ type: 'object', properties: {} }, root);
    if (!s.properties) s.properties = {};
    return editor(s, root, '', true, 0);
  }

  // --- showing results --------------------------------------------------------------------

  function contentView(item) {
    if (!item || typeof item !== 'object') return pre(json(item));
    switch (item.type) {
      case 'text': return pre(item.text, 'text');
      case 'image':
        if (typeof item.data === 'string' && /^image\/[a-z0-9.+-]+$/i.test(item.mimeType || '')) {
          return h('img', { class: 'content', alt: 'image content', src: 'data:' + item.mimeType + ';base64,' + item.data });
        }
        return pre('[image ' + (item.mimeType || '') + ']');
      case 'audio': return pre('[audio ' + (item.mimeType || '') + ', ' + (item.data || '').length + ' base64 characters]');
      case 'resource': {
        const r = item.resource || {};
        return h('div', {}, pre('resource ' + (r.uri || '') + (r.mimeType ? ' (' + r.mimeType + ')' : '')), 'text' in r ? pre(r.text, 'text') : pre('[' + (r.blob || '').length + ' base64 characters]'));
      }
      case 'resource_link': return pre('link ' + item.uri + (item.name ? ' (' + item.name + ')' : ''));
      default: return pre(json(item));
    }
  }

  // The result of a call, its events and its raw exchanges, in `out`; and, when the result
  // asks for input, the forms that answer it, whose answers make the retry round.
  function runner(out, method, baseParams, tool) {
    const events = h('ul', { class: 'events' });
    const result = h('div', { class: 'result' });
    const raw = h('div', { class: 'raw' });
    out.replaceChildren(h('div', { class: 'output' }, result, h('div', {}, h('strong', {}, 'Progress and log messages'), events), h('details', { class: 'schema' }, h('summary', {}, 'Raw request and response'), raw)));
    const round = async (extra, n) => {
      const token = 'catalog-' + nextProgress++;
      const params = Object.assign({}, baseParams, extra, { _meta: meta(token) });
      result.className = 'result pending';
      result.replaceChildren('Running…');
      const ex = await rpc(method, params, tool ? paramHeaders(tool, baseParams.arguments) : {}, (note) => {
        const p = note.params || {};
        if (note.method === 'notifications/progress') {
          events.append(h('li', { class: 'progress' }, 'progress ' + p.progress + (p.total !== undefined ? '/' + p.total : '') + (p.message ? ' ' + p.message : '')));
        } else if (note.method === 'notifications/message') {
          events.append(h('li', { class: 'log' }, '[' + p.level + '] ' + (p.logger ? p.logger + ': ' : '') + (typeof p.data === 'string' ? p.data : JSON.stringify(p.data))));
        } else {
          events.append(h('li', {}, note.method + ' ' + JSON.stringify(p)));
        }
      });
      raw.append(h('div', {}, h('strong', {}, 'Round ' + n + ': request'), pre(ex.request), h('strong', {}, 'Response'), pre(ex.raw)));
      show(ex, n);
    };
    const show = (ex, n) => {
      const r = ex.response;
      result.className = 'result';
      result.setAttribute('data-round', String(n));
      if (!r) {
        result.className = 'result error';
        result.replaceChildren(h('strong', {}, 'No JSON-RPC response (HTTP ' + ex.status + ')'), pre(ex.raw));
        return;
      }
      if (r.error) {
        result.className = 'result error';
        result.replaceChildren(h('strong', {}, 'Error ' + r.error.code + ': '), r.error.message, r.error.data !== undefined ? pre(json(r.error.data)) : null);
        return;
      }
      const res = r.result || {};
      if (res.resultType === 'input_required') {
        result.className = 'result input';
        result.replaceChildren(inputForms(res, (answers) => round(Object.assign({ inputResponses: answers }, typeof res.requestState === 'string' ? { requestState: res.requestState } : {}), n + 1)));
        return;
      }
      const parts = [];
      if (res.isError) { result.className = 'result error'; parts.push(h('strong', {}, 'The tool reported an error')); }
      if (Array.isArray(res.content)) parts.push(...res.content.map(contentView));
      if (res.structuredContent !== undefined) parts.push(h('div', {}, h('strong', {}, 'structuredContent'), pre(json(res.structuredContent))));
      if (Array.isArray(res.contents)) {
        for (const c of res.contents) parts.push(h('div', {}, h('strong', {}, c.uri + (c.mimeType ? ' (' + c.mimeType + ')' : '')), 'text' in c ? pre(c.text, 'text') : pre('base64: ' + c.blob)));
      }
      if (Array.isArray(res.messages)) {
        for (const m of res.messages) parts.push(h('div', {}, h('strong', {}, m.role), contentView(m.content)));
      }
      if (!parts.length) parts.push(pre(json(res)));
      result.replaceChildren(...parts);
    };
    return () => round({}, 1);
  }

  // The forms of an input_required result: one per elicitation; roots are answered with
  // no roots; sampling cannot be answered by this page. `send` gets the answers once
  // each elicitation has one.
  function inputForms(res, send) {
    const box = h('div', { class: 'inputs' }, h('strong', {}, 'The server asks for input'));
    const answers = {};
    const pending = new Set();
    const done = () => { if (pending.size === 0) send(answers); };
    for (const [key, req] of Object.entries(res.inputRequests || {})) {
      const p = (req && req.params) || {};
      if (req && req.method === 'elicitation/create' && p.mode !== 'url') {
        pending.add(key);
        const form = objectForm(p.requestedSchema);
        const panel = h('form', { class: 'elicit', 'data-input': key },
          h('div', { class: 'message' }, p.message || key), form.el);
        const answer = (action) => (ev) => {
          ev.preventDefault();
          try {
            answers[key] = action === 'accept' ? { action, content: form.get() } : { action };
          } catch (e) { status(e.message, true); return; }
          panel.querySelectorAll('button').forEach((b) => { b.disabled = true; });
          pending.delete(key);
          done();
        };
        panel.addEventListener('submit', answer('accept'));
        panel.append(h('div', { class: 'actions' },
          h('button', { type: 'submit', class: 'run', 'data-action': 'accept' }, 'Accept'),
          h('button', { type: 'button', 'data-action': 'decline', onclick: answer('decline') }, 'Decline'),
          h('button', { type: 'button', 'data-action': 'cancel', onclick: answer('cancel') }, 'Cancel')));
        box.append(panel);
      } else if (req && req.method === 'elicitation/create') {
        box.append(h('div', { class: 'elicit' }, 'Open this address, then come back: ', pre(p.url || '')));
        pending.add(key);
        box.append(h('button', { type: 'button', onclick: () => { answers[key] = { action: 'accept' }; pending.delete(key); done(); } }, 'Done'));
      } else if (req && req.method === 'roots/list') {
        answers[key] = { roots: [] };
        box.append(h('div', {}, 'Roots asked for (' + key + '): answered with none'));
      } else {
        box.append(h('div', { class: 'error' }, 'This page cannot answer ' + (req && req.method) + ' (' + key + ')'));
        pending.add(key);
      }
    }
    if (!res.inputRequests || Object.keys(res.inputRequests).length === 0) {
      box.append(h('button', { type: 'button', class: 'run', onclick: () => send({}) }, 'Retry with the request state'));
    }
    return box;
  }

  // --- the items --------------------------------------------------------------------------

  function item(kind, name, title, desc, bodyParts) {
    return h('details', { class: 'item ' + kind, 'data-name': name },
      h('summary', {}, h('span', { class: 'name' }, name), title ? h('span', { class: 'title' }, title) : null, desc ? h('span', { class: 'desc' }, firstLine(desc)) : null),
      h('div', { class: 'body' }, bodyParts));
  }

  // The first paragraph of a description on one line, cut at 100 characters.
  function firstLine(s) {
    const l = String(s).split(/\n\s*\n/)[0].replace(/\s+/g, ' ').trim();
    return l.length > 100 ? l.slice(0, 99) + '…' : l;
  }

  function schemaBlock(label, schema) {
    return h('details', { class: 'schema' }, h('summary', {}, label), pre(json(schema)));
  }

  function annotationTags(a) {
    if (!a || typeof a !== 'object') return null;
    const tags = Object.entries(a).map(([k, v]) => h('span', {}, k + ': ' + (typeof v === 'string' ? v : JSON.stringify(v))));
    return tags.length ? h('div', { class: 'tags' }, h('strong', {}, 'Annotations '), tags) : null;
  }

  function toolItem(tool) {
    const out = h('div', {});
    let form;
    const formBox = h('div', {});
    try {
      form = objectForm(tool.inputSchema);
      formBox.append(form.el);
    } catch (e) {
      formBox.append(pre('No form for this schema: ' + e.message));
    }
    const run = h('form', { class: 'call', 'data-tool': tool.name }, formBox,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'run' }, 'Call')));
    run.addEventListener('submit', (ev) => {
      ev.preventDefault();
      let args;
      try { args = form ? form.get() : {}; } catch (e) { status(e.message, true); return; }
      runner(out, 'tools/call', { name: tool.name, arguments: args }, tool)();
    });
    const exec = tool.execution && tool.execution.taskSupport;
    return item('tool', tool.name, tool.title || (tool.annotations && tool.annotations.title), tool.description, [
      tool.description ? h('div', { class: 'description' }, tool.description) : null,
      annotationTags(tool.annotations),
      exec ? h('div', { class: 'tags' }, h('span', {}, 'task: ' + exec)) : null,
      schemaBlock('Input schema', tool.inputSchema),
      tool.outputSchema ? schemaBlock('Output schema', tool.outputSchema) : null,
      run,
      out,
    ]);
  }

  function resourceItem(r) {
    const out = h('div', {});
    const read = h('button', { type: 'button', class: 'run', 'data-read': r.uri, onclick: () => runner(out, 'resources/read', { uri: r.uri })() }, 'Read');
    return item('resource', r.uri, r.name + (r.title ? ' — ' + r.title : ''), r.description, [
      r.description ? h('div', { class: 'description' }, r.description) : null,
      h('div', { class: 'tags' }, r.mimeType ? h('span', {}, r.mimeType) : null, typeof r.size === 'number' ? h('span', {}, r.size + ' bytes') : null),
      annotationTags(r.annotations),
      h('div', { class: 'actions' }, read),
      out,
    ]);
  }

  function templateItem(t) {
    const out = h('div', {});
    const vars = [];
    const re = /\{[+#./;?&]?([^}]+)\}/g;
    let m;
    while ((m = re.exec(t.uriTemplate))) {
      for (const v of m[1].split(',')) vars.push(v.replace(/\*$|:\d+$/, ''));
    }
    const inputs = vars.map((v) => [v, h('input', { type: 'text', 'data-field': v, spellcheck: 'false' })]);
    const form = h('form', { class: 'call', 'data-template': t.uriTemplate },
      h('fieldset', {}, inputs.map(([v, el]) => h('div', { class: 'field' }, h('span', { class: 'label' }, v), el))),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'run' }, 'Read')));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const values = Object.fromEntries(inputs.map(([v, el]) => [v, el.value]));
      const uri = t.uriTemplate.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, names) =>
        names.split(',').map((n) => {
          const v = values[n.replace(/\*$|:\d+$/, '')] || '';
          return op === '+' || op === '#' ? encodeURI(v) : encodeURIComponent(v);
        }).join(','));
      runner(out, 'resources/read', { uri })();
    });
    return item('template', t.uriTemplate, t.name + (t.title ? ' — ' + t.title : ''), t.description, [
      t.description ? h('div', { class: 'description' }, t.description) : null,
      t.mimeType ? h('div', { class: 'tags' }, h('span', {}, t.mimeType)) : null,
      annotationTags(t.annotations),
      form,
      out,
    ]);
  }

  function promptItem(p) {
    const out = h('div', {});
    const args = Array.isArray(p.arguments) ? p.arguments : [];
    const inputs = args.map((a) => [a, h('input', { type: 'text', 'data-field': a.name, spellcheck: 'false' })]);
    const form = h('form', { class: 'call', 'data-prompt': p.name },
      inputs.length ? h('fieldset', {}, inputs.map(([a, el]) => h('div', { class: 'field' },
        h('span', { class: 'label' }, a.name, a.required ? h('span', { class: 'req', title: 'required' }, '*') : null),
        h('div', {}, el, a.description ? h('div', { class: 'hint' }, a.description) : null)))) : null,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'run' }, 'Get')));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const values = {};
      for (const [a, el] of inputs) if (el.value !== '' || a.required) values[a.name] = el.value;
      runner(out, 'prompts/get', { name: p.name, arguments: values })();
    });
    return item('prompt', p.name, p.title, p.description, [
      p.description ? h('div', { class: 'description' }, p.description) : null,
      form,
      out,
    ]);
  }

  // --- loading ----------------------------------------------------------------------------

  async function section(id, offered, method, key, view) {
    const list = document.querySelector('#' + id + ' .list');
    list.replaceChildren();
    if (!offered) {
      list.append(h('p', { class: 'muted' }, 'Not offered by this server.'));
      return 0;
    }
    const items = await listAll(method, key);
    if (!items.length) list.append(h('p', { class: 'muted' }, 'None.'));
    for (const it of items) list.append(view(it));
    return items.length;
  }

  async function load() {
    status('Loading…');
    try {
      const ex = await rpc('server/discover', { _meta: meta() });
      const r = ex.response;
      if (!r || r.error || !r.result) {
        status('server/discover failed: ' + (r && r.error ? r.error.code + ' ' + r.error.message : 'HTTP ' + ex.status + ' ' + ex.raw), true);
        return;
      }
      const d = r.result;
      const info = (d._meta && d._meta['io.modelcontextprotocol/serverInfo']) || d.serverInfo || {};
      document.getElementById('server-name').textContent = (info.title || info.name || 'MCP server') + (info.version ? ' ' + info.version : '');
      document.title = (info.title || info.name || 'MCP server') + ' — catalog';
      document.getElementById('server-about').textContent = d.instructions || '';
      const caps = d.capabilities || {};
      const counts = [
        await section('tools', !!caps.tools, 'tools/list', 'tools', toolItem),
        await section('resources', !!caps.resources, 'resources/list', 'resources', resourceItem),
        await section('templates', !!caps.resources, 'resources/templates/list', 'resourceTemplates', templateItem),
        await section('prompts', !!caps.prompts, 'prompts/list', 'prompts', promptItem),
      ];
      const toc = document.getElementById('toc');
      toc.replaceChildren(...['tools', 'resources', 'templates', 'prompts'].map((id, i) => h('a', { href: '#' + id }, id + ' (' + counts[i] + ')')));
      status('Speaking ' + PROTOCOL + ' to ' + ENDPOINT + '; versions offered: ' + (d.supportedVersions || []).join(', '));
      document.body.setAttribute('data-loaded', 'true');
    } catch (e) {
      status(String(e.message || e), true);
    }
  }

  document.getElementById('settings').addEventListener('submit', (ev) => {
    ev.preventDefault();
    load();
  });
  load();
})();
