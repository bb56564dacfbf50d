import { describe, expect, it } from 'vitest';
import type { ModelReading } from '../../src/core/context.js';
import { bodyModelReader, modelFromGet } from '../../src/proxy/request-model.js';

function readBody(
  method: string,
  contentType: string | undefined,
  query: string,
  body: string | Buffer,
  splitEvery = 0,
): ModelReading {
  const reader = bodyModelReader(method, contentType, query);
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  if (splitEvery > 0) for (let i = 0; i < bytes.length; i += splitEvery) reader.feed(bytes.subarray(i, i + splitEvery));
  else reader.feed(bytes);
  return reader.end();
}

function multipart(boundary: string, parts: Array<{ headers: string[]; body: string | Buffer }>): Buffer {
  const out: Buffer[] = [];
  for (const part of parts) {
    out.push(Buffer.from(`--${boundary}\r\n${part.headers.map((h) => `${h}\r\n`).join('')}\r\n`, 'latin1'));
    out.push(Buffer.isBuffer(part.body) ? part.body : Buffer.from(part.body, 'utf8'));
    out.push(Buffer.from('\r\n', 'latin1'));
  }
  out.push(Buffer.from(`--${boundary}--\r\n`, 'latin1'));
  return Buffer.concat(out);
}

const found = (model: string) => ({ status: 'found', model });
const MP = 'multipart/form-data; boundary=XyZ';

describe('reading the model as llama-swap does', () => {
  it('GET takes the first ?model= (url.Values.Get), decoding + and %XX', () => {
    expect(modelFromGet('model=qwen&model=qwen')).toEqual(found('qwen'));
    expect(modelFromGet('a=1&model=llama%2D3.2+3b')).toEqual(found('llama-3.2 3b'));
    expect(modelFromGet('x=1')).toEqual({ status: 'absent' });
    expect(modelFromGet('model=a&model=b').status).toBe('uncertain');
    expect(modelFromGet('model=a;x=1').status).toBe('uncertain');
    expect(modelFromGet('model=%zz').status).toBe('uncertain');
  });

  it('reads JSON only when Content-Type contains application/json, case-sensitively', () => {
    expect(readBody('POST', 'application/json; charset=utf-8', '', '{"model":"qwen"}')).toEqual(found('qwen'));
    expect(readBody('POST', 'application/vnd.api+json', '', '{"model":"qwen"}')).toEqual({ status: 'absent' });
    // Go's form parser reads no body for this type, so llama-swap finds no model at all.
    expect(readBody('POST', 'Application/JSON', '', '{"model":"qwen"}')).toEqual({ status: 'absent' });
    expect(readBody('POST', 'Application/JSON', 'model=llama', '{"model":"qwen"}')).toEqual(found('llama'));
    expect(readBody('POST', 'text/plain', '', '{"model":"qwen"}')).toEqual({ status: 'absent' });
  });

  it('refuses to answer for a JSON body that names two models or is not valid JSON', () => {
    expect(readBody('POST', 'application/json', '', '{"mod\\u0065l":"llama","model":"qwen"}').status).toBe('uncertain');
    expect(readBody('POST', 'application/json', '', '{"model":"qwen"').status).toBe('uncertain');
    expect(readBody('POST', 'application/json', '', '{"model":5}').status).toBe('uncertain');
    expect(readBody('POST', 'application/json', 'model=llama', '{"model":"qwen"}').status).toBe('uncertain');
    expect(readBody('POST', 'application/json', '', '{"model":null}')).toEqual({ status: 'absent' });
    expect(readBody('POST', 'application/json', '', '{"model":""}')).toEqual({ status: 'absent' });
  });

  it('reads a urlencoded body before the query, and any disagreement is no answer', () => {
    const form = 'application/x-www-form-urlencoded';
    expect(readBody('POST', form, '', 'a=1&model=qwen')).toEqual(found('qwen'));
    expect(readBody('POST', form, '', 'mod%65l=llama-3.2-3b')).toEqual(found('llama-3.2-3b'));
    expect(readBody('POST', form, 'model=qwen', 'mod%65l=llama-3.2-3b&model=qwen').status).toBe('uncertain');
    expect(readBody('POST', form, 'model=qwen', 'x=1')).toEqual(found('qwen'));
    expect(readBody('POST', form, '', 'model=a;b')).toMatchObject({ status: 'uncertain' });
    expect(readBody('DELETE', form, 'model=q', 'model=llama')).toEqual(found('q'));
  });

  it('reads multipart fields after the query; files named model are not values', () => {
    const body = multipart('XyZ', [
      {
        headers: ['Content-Disposition: form-data; name="file"; filename="a.wav"', 'Content-Type: audio/wav'],
        body: Buffer.from('RIFF\r\n--XyZ-not-a-boundary\r\n--XyZx', 'latin1'),
      },
      { headers: ['Content-Disposition: form-data; name="model"; filename="model.txt"'], body: 'llama' },
      { headers: ['content-disposition: form-data; name=model'], body: 'whisper' },
    ]);
    expect(readBody('POST', MP, '', body)).toEqual(found('whisper'));
    for (const every of [1, 2, 3, 7, 64])
      expect(readBody('POST', MP, '', body, every), `chunks of ${every}`).toEqual(found('whisper'));
    expect(readBody('POST', MP, 'model=whisper', body)).toEqual(found('whisper'));
    expect(readBody('POST', MP, 'model=qwen', body).status).toBe('uncertain');
  });

  it('gives no answer for multipart bodies Go might read differently', () => {
    const model = (headers: string[], value = 'llama') => multipart('XyZ', [{ headers, body: value }]);
    expect(readBody('POST', MP, '', model(["Content-Disposition: form-data; name*=UTF-8''model"])).status).toBe(
      'uncertain',
    );
    expect(
      readBody(
        'POST',
        MP,
        '',
        model(
          ['Content-Disposition: form-data; name="model"', 'Content-Transfer-Encoding: quoted-printable'],
          'll=61ma',
        ),
      ).status,
    ).toBe('uncertain');
    expect(readBody('POST', MP, '', model(['Content-Disposition: form-data; name="mo\\del"'])).status).toBe(
      'uncertain',
    );
    expect(readBody('POST', MP, '', model(['Content-Disposition: form-data; name="model"', ' folded'])).status).toBe(
      'uncertain',
    );
    expect(
      readBody('POST', MP, '', model(['Content-Disposition: form-data; name="model"']).subarray(0, 60)).status,
    ).toBe('uncertain');
    expect(
      readBody('POST', MP, '', Buffer.from('--XyZ\nContent-Disposition: form-data; name="model"\n\nllama\n--XyZ--\n'))
        .status,
    ).toBe('uncertain');
    expect(
      readBody('POST', 'multipart/form-data', '', model(['Content-Disposition: form-data; name="model"'])).status,
    ).toBe('uncertain');
    const two = multipart('XyZ', [
      { headers: ['Content-Disposition: form-data; name="model"'], body: 'qwen' },
      { headers: ['Content-Disposition: form-data; name="model"'], body: 'llama' },
    ]);
    expect(readBody('POST', MP, '', two).status).toBe('uncertain');
  });

  it('ends a part whose body begins with the boundary, as Go does, so a hidden part is still read', () => {
    const hidden = (afterBoundary: string) =>
      Buffer.from(
        `--XyZ\r\nContent-Disposition: form-data; ` +
          `name="x"\r\n\r\n--XyZ${afterBoundary}\r\nContent-Disposition: form-data; ` +
          `name="model"\r\n\r\nllama-3.2-3b\r\n` +
          `--XyZ\r\nContent-Disposition: form-data; name="model"\r\n\r\nqwen\r\n--XyZ--\r\n`,
      );
    for (const after of ['', ' ', '\t']) {
      for (const every of [0, 1, 5])
        expect(readBody('POST', MP, '', hidden(after), every), JSON.stringify([after, every])).toMatchObject({
          status: 'uncertain',
          guess: 'llama-3.2-3b',
        });
    }
    const onlyHidden = Buffer.from(
      `--XyZ\r\n\r\n--XyZ\r\nContent-Disposition: form-data; name="model"\r\n\r\nllama-3.2-3b\r\n--XyZ--\r\n`,
    );
    expect(readBody('POST', MP, '', onlyHidden)).toEqual(found('llama-3.2-3b'));
    // `--XyZx` at the start of a part is content, as in Go.
    const content = Buffer.from(`--XyZ\r\nContent-Disposition: form-data; name="model"\r\n\r\n--XyZx\r\n--XyZ--\r\n`);
    expect(readBody('POST', MP, '', content)).toEqual(found('--XyZx'));
  });

  it('reads a part with no name, or of another disposition, as no value', () => {
    const body = multipart('XyZ', [
      { headers: [], body: 'x' },
      { headers: ['Content-Disposition: attachment; name="model"'], body: 'llama' },
      { headers: ['Content-Disposition: form-data; name="model"'], body: 'qwen' },
    ]);
    expect(readBody('POST', MP, '', body)).toEqual(found('qwen'));
  });
});
