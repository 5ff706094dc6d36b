// Checks a Microsoft Teams Workflows webhook body (one Adaptive Card 1.4 attachment) with the
// npm `adaptivecards` library. Written for this project's notification tests.
//
//   node tests/peers/check_card.cjs PAYLOAD.json
//
// Prints one JSON line {"ok": bool, "failures": [strings]} on stdout.
// Exit 0 when ok, 1 when not, 2 on bad usage, an unreadable file or a missing library.
//
// DOM globals: none. adaptivecards 3.0.6's dist bundle loads, parses and validates under Node
// without `window`/`document` (only rendering needs a DOM, and this never renders).
'use strict';
const fs = require('fs');

// The library logs through console.log in places; stdout carries only our result line.
console.log = console.info = console.debug = console.error;

function usage(message) {
  process.stderr.write(`check_card: ${message}\nusage: node tests/peers/check_card.cjs PAYLOAD.json\n`);
  process.exitCode = 2;
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

function checkEnvelope(payload, failures) {
  if (!isObject(payload)) {
    failures.push('envelope: payload is not a JSON object');
    return undefined;
  }
  if (payload.type !== 'message') {
    failures.push(`envelope: type is ${JSON.stringify(payload.type)}, want "message"`);
  }
  const atts = payload.attachments;
  if (!Array.isArray(atts) || atts.length !== 1) {
    const got = Array.isArray(atts) ? `${atts.length} attachments` : JSON.stringify(atts);
    failures.push(`envelope: attachments must be an array of exactly 1, got ${got}`);
    if (!Array.isArray(atts) || atts.length === 0) return undefined;
  }
  const att = atts[0];
  if (!isObject(att)) {
    failures.push('envelope: attachments[0] is not an object');
    return undefined;
  }
  if (att.contentType !== 'application/vnd.microsoft.card.adaptive') {
    failures.push(`envelope: attachments[0].contentType is ${JSON.stringify(att.contentType)}, ` +
      'want "application/vnd.microsoft.card.adaptive"');
  }
  const content = att.content;
  if (!isObject(content)) {
    failures.push('envelope: attachments[0].content is not an object');
    return undefined;
  }
  // The library accepts a card without "type" and defaults a missing version to 1.0: check both here.
  if (content.type !== 'AdaptiveCard') {
    failures.push(`card: type is ${JSON.stringify(content.type)}, want "AdaptiveCard"`);
  }
  if (content.version !== '1.4') {
    failures.push(`card: version is ${JSON.stringify(content.version)}, want "1.4"`);
  }
  return content;
}

function describe(AC, prefix, e) {
  return `${prefix}: ${AC.ValidationEvent[e.event] ?? e.event}: ${e.message}`;
}

function checkCard(AC, content, failures) {
  try {
    const card = new AC.AdaptiveCard();
    // Target the declared 1.4: the default target is the library's latest (1.6), which would
    // silently accept 1.5+ elements and properties in a card that claims 1.4.
    const ctx = new AC.SerializationContext(AC.Versions.v1_4);
    card.parse(content, ctx);
    for (let i = 0; i < ctx.eventCount; i++) failures.push(describe(AC, 'parse', ctx.getEventAt(i)));
    // 3.0.6's ValidationResults exposes an array, not getEventCount/getEventAt.
    for (const e of card.validateProperties().validationEvents) failures.push(describe(AC, 'validate', e));
  } catch (err) {
    failures.push(`card: the library threw: ${err && err.message ? err.message : String(err)}`);
  }
}

function main(argv) {
  if (argv.length !== 1 || argv[0].startsWith('-')) return usage('expected exactly one argument, PAYLOAD.json');
  let text;
  try {
    text = fs.readFileSync(argv[0], 'utf8');
  } catch (err) {
    return usage(`cannot read ${argv[0]}: ${err.code || err.message}`);
  }
  let AC;
  try {
    AC = require('adaptivecards/dist/adaptivecards.js');
  } catch (err) {
    return usage(`adaptivecards is not installed (npm ci --prefix tests/peers): ${err.message}`);
  }
  const failures = [];
  let payload;
  try {
    payload = JSON.parse(text);
  } catch (err) {
    failures.push(`envelope: not JSON: ${err.message}`);
  }
  if (failures.length === 0) {
    const content = checkEnvelope(payload, failures);
    if (content !== undefined) checkCard(AC, content, failures);
  }
  const ok = failures.length === 0;
  process.stdout.write(JSON.stringify({ ok, failures }) + '\n');
  process.exitCode = ok ? 0 : 1;
}

main(process.argv.slice(2));
