/**
 * Home Assistant. Core "OpenAI Conversation" has no base-URL field by design,
 * so both snippets are HACS custom integrations; the text lists the fields to fill in.
 */
import { defineSnippet } from './define.js';
import { optionalKey, requiredKey } from './keys.js';
import { lines } from './quoting.js';
import { openaiBaseUrl } from './urls.js';

/** `  Label:  value`, labels padded so the values line up. */
function fields(rows: Array<[string, string]>): string {
  const width = Math.max(...rows.map(([label]) => label.length)) + 1;
  return lines(...rows.map(([label, value]) => `     ${`${label}:`.padEnd(width)}  ${value}`));
}

const CORE_OPENAI =
  'The built-in "OpenAI Conversation" integration cannot point at another server (no base-URL field, by ' +
  'design); use this custom integration instead.';
const LAN =
  "Use the gateway's LAN address, not localhost: Home Assistant usually runs in its own container or machine.";
const TOOLS =
  "Controlling devices needs a model that supports tool calling, and Assist's prompt is long: give the " +
  'model a context of 10k tokens or more.';

const homeAssistantLocalOpenai = defineSnippet({
  id: 'home-assistant-local-openai',
  title: 'Home Assistant: Local OpenAI LLM (recommended)',
  client: 'Local OpenAI LLM (Home Assistant)',
  group: 'home-automation',
  language: 'text',
  where: 'Home Assistant: HACS, then Settings → Devices & Services → Add Integration → "Local OpenAI LLM".',
  pitfalls: [
    'Server URL ends in /v1.',
    'Setup checks the server by listing /v1/models with the key, and the model picker is filled from it: a ' +
      'key that cannot list models fails the setup.',
    TOOLS,
    LAN,
    CORE_OPENAI,
  ],
  baseUrlKind: 'openai',
  keyRequired: false,
  needs: ['models-list'],
  keyField: 'the API key field',
  render: (ctx) =>
    lines(
      '1. HACS → ⋮ → Custom repositories → https://github.com/skye-harris/hass_local_openai_llm (type: Integration),',
      '   install "Local OpenAI LLM", restart Home Assistant.',
      '2. Settings → Devices & Services → Add Integration → "Local OpenAI LLM":',
      fields([
        ['Server Name', 'Gatehouse'],
        ['Server URL', openaiBaseUrl(ctx.origin)],
        ['API key', optionalKey(ctx.key) ?? '(leave empty)'],
        ['Server Type', 'Generic OpenAI-Compatible'],
      ]),
      '3. On the new entry → Add conversation agent:',
      fields([
        ['Model', ctx.model],
        ['Tool Providers', 'Assist'],
      ]),
      '4. Settings → Voice assistants → pick the new agent as Conversation agent, ' +
        'and expose the entities it may control.',
    ),
});

const homeAssistantExtendedOpenai = defineSnippet({
  id: 'home-assistant-extended-openai',
  title: 'Home Assistant: Extended OpenAI Conversation',
  client: 'Extended OpenAI Conversation (Home Assistant)',
  group: 'home-automation',
  language: 'text',
  where: 'Home Assistant: HACS, then Settings → Devices & Services → Add Integration → "Extended OpenAI Conversation".',
  pitfalls: [
    'Base Url ends in /v1 (its default is https://api.openai.com/v1).',
    'API Key is a required field; setup validates it by listing /v1/models unless Skip Authentication is ticked.',
    'Requests are not streamed, so a long answer arrives all at once.',
    TOOLS,
    LAN,
  ],
  baseUrlKind: 'openai',
  keyRequired: true,
  needs: ['models-list'],
  keyField: 'the API Key field',
  render: (ctx) =>
    lines(
      '1. HACS → install "Extended OpenAI Conversation" (github.com/jekalmin/extended_openai_conversation;',
      '   add it under ⋮ → Custom repositories if HACS does not list it), restart Home Assistant.',
      '2. Settings → Devices & Services → Add Integration → "Extended OpenAI Conversation":',
      fields([
        ['Name', 'Gatehouse'],
        ['API Key', requiredKey(ctx.key)],
        ['Base Url', openaiBaseUrl(ctx.origin)],
        ['Api Version', '(leave empty)'],
        ['Organization', '(leave empty)'],
        ['Skip Authentication', 'off'],
        ['Api Provider', 'OpenAI'],
      ]),
      '3. On the new entry → add a conversation agent:',
      fields([['Completion Model', ctx.model]]),
      '4. Settings → Voice assistants → pick the new agent as Conversation agent, ' +
        'and expose the entities it may control.',
    ),
});

export const HOME_ASSISTANT_SNIPPETS = [homeAssistantLocalOpenai, homeAssistantExtendedOpenai] as const;
