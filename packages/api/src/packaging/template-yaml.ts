/**
 * YAML with Go-template holes, for Helm chart templates. The objects are built once, as plain
 * data; a value that the chart's user sets becomes a hole, and the holes are written into the
 * YAML text after the `yaml` package has serialised the rest. So the chart and the plain
 * manifests come from the same builders and cannot drift apart. Pure.
 */
import { stringify } from 'yaml';

const HOLE = Symbol('kanri.template-hole');

/** A place in an object where the template computes the value. */
export interface Hole {
  readonly [HOLE]: true;
  /**
   * `inline`: the text replaces the scalar as is (`{{ .Values.replicas }}`).
   * `block`: a Go expression yielding YAML, indented under its key (`toYaml .Values.resources`).
   * `with`: a Go value; the key and its YAML are written only when the value is non-empty.
   */
  readonly kind: 'inline' | 'block' | 'with';
  readonly text: string;
}

/** The value is this template text, for example `'{{ .Values.replicas }}'`. */
export const inline = (text: string): Hole => ({ [HOLE]: true, kind: 'inline', text });
/** The value is the YAML this Go expression yields, for example `'toYaml .Values.resources'`. */
export const block = (expression: string): Hole => ({ [HOLE]: true, kind: 'block', text: expression });
/** The key is present only when this Go value is non-empty, for example `'.Values.nodeSelector'`. */
export const withValue = (value: string): Hole => ({ [HOLE]: true, kind: 'with', text: value });

export const isHole = (value: unknown): value is Hole => typeof value === 'object' && value !== null && HOLE in value;

/** A value a builder takes either as data (plain manifests) or as a hole (chart templates). */
export type Templated<T> = T | Hole;

const TOKEN = /__KANRI_HOLE_(\d+)__/g;

/** Serialises `object` to YAML with every hole written as Go-template text. */
export function templateYaml(object: unknown): string {
  const holes: Hole[] = [];
  const swap = (value: unknown): unknown => {
    if (isHole(value)) return `__KANRI_HOLE_${holes.push(value) - 1}__`;
    if (Array.isArray(value)) return value.map(swap);
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, swap(v)]));
    }
    return value;
  };
  const text = stringify(swap(object), { lineWidth: 0 });
  const lines = text.split('\n').map((line) => {
    const match = /^( *)(- )?([^\s:#][^:]*): __KANRI_HOLE_(\d+)__$/.exec(line);
    const hole = match ? holes[Number(match[4])] : undefined;
    if (!match || !hole || hole.kind === 'inline') return line;
    const [, indent = '', dash = '', key] = match;
    if (dash && hole.kind === 'with') throw new Error(`templateYaml: a "with" hole cannot start a list item (${key})`);
    const keyIndent = indent.length + dash.length;
    const pad = ' '.repeat(keyIndent);
    const inner = keyIndent + 2;
    if (hole.kind === 'block') {
      return `${indent}${dash}${key}:\n${' '.repeat(inner)}{{- ${hole.text} | nindent ${inner} }}`;
    }
    return [
      `${pad}{{- with ${hole.text} }}`,
      `${pad}${key}:`,
      `${' '.repeat(inner)}{{- toYaml . | nindent ${inner} }}`,
      `${pad}{{- end }}`,
    ].join('\n');
  });
  return lines.join('\n').replace(TOKEN, (_token, index: string) => {
    const hole = holes[Number(index)];
    if (hole?.kind !== 'inline') throw new Error(`templateYaml: a ${hole?.kind} hole must be a whole value`);
    return hole.text;
  });
}
