/** Splits a byte stream of newline-delimited JSON (the watch protocol) into parsed values. */

export async function* parseNdjson(chunks: AsyncIterable<Buffer | string>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of chunks) {
    buffered += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim()) yield JSON.parse(line);
      newline = buffered.indexOf('\n');
    }
  }
  buffered += decoder.decode();
  if (buffered.trim()) yield JSON.parse(buffered);
}
