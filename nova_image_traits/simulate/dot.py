# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Draw provider trees as Graphviz DOT, for ``simulate -f dot``.

One digraph holds one cluster per rebuild case: the host's provider tree
(root, nested children, and the sharing providers of its aggregates, joined
by a dashed edge), each provider with its inventory and traits. The traits
the new image requires are green where a provider has them; the ones no
provider has, or that the flavor forbids, or that are not valid names, are
listed red in a note. The cluster's title gives every strategy's outcome.
Render it with ``dot -Tsvg``.
"""

import dataclasses
import html

from nova_image_traits import traits as nit_traits

GREEN = '#1a7f37'
RED = '#cf222e'
ORANGE = '#bc4c00'
_OUTCOME_COLOURS = {'accept': GREEN, 'reject': RED}


@dataclasses.dataclass
class Provider:
    """One resource provider as drawn.

    :ivar parent: the parent's UUID, None for a root or a sharing provider
    :ivar usage: what the server is allocated here, ``{rc: amount}``
    """
    uuid: str
    name: str
    parent: str = None
    traits: frozenset = frozenset()
    inventory: dict = dataclasses.field(default_factory=dict)
    sharing: bool = False
    usage: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Panel:
    """One rebuild case: a tree and what the image asks of it.

    :ivar verdicts: ``(strategy, outcome, fallback)`` tuples, in order
    """
    title: str
    root: str
    providers: list
    required: frozenset = frozenset()
    forbidden: frozenset = frozenset()
    invalid: tuple = ()
    verdicts: list = dataclasses.field(default_factory=list)


def _esc(text):
    return html.escape(str(text), quote=True)


def _font(text, colour):
    return '<font color="%s">%s</font>' % (colour, text)


def _amounts(mapping):
    return ', '.join('%s %s' % (_esc(rc), n)
                     for rc, n in sorted(mapping.items()))


def _provider_label(provider, required):
    rows = ['<b>%s</b>' % _esc(provider.name)]
    if provider.sharing:
        rows.append('<i>sharing provider</i>')
    if provider.inventory:
        rows.append(_amounts(provider.inventory))
    if provider.usage:
        rows.append('<i>server uses: %s</i>' % _amounts(provider.usage))
    rows += [_font('<b>&#10004; %s</b>' % _esc(t), GREEN) if t in required
             else _esc(t) for t in sorted(provider.traits)]
    return '<%s>' % '<br/>'.join(rows)


def _title(panel):
    rows = ['<b>%s</b>' % _esc(panel.title)]
    if panel.required or panel.invalid:
        rows.append('requires: %s' % _esc(', '.join(
            sorted(panel.required) + list(panel.invalid))))
    verdicts = []
    for strategy, outcome, fallback in panel.verdicts:
        text = '%s: %s' % (_esc(strategy), _esc(outcome))
        if fallback:
            text += ' (via %s)' % _esc(fallback)
        verdicts.append(_font(text, _OUTCOME_COLOURS.get(outcome, ORANGE)))
    if verdicts:
        rows.append(' &#183; '.join(verdicts))
    return '<%s>' % '<br/>'.join(rows)


def _missing_label(panel, present):
    rows = ['%s: on no provider' % t for t in sorted(panel.required - present)]
    rows += ['%s: forbidden by the flavor' % t
             for t in sorted(panel.required & panel.forbidden)]
    rows += ['%s: not a valid trait name' % p for p in panel.invalid]
    return '<%s>' % '<br/>'.join(
        _font('&#10008; ' + _esc(r), RED) for r in rows) if rows else None


def _node_id(index, uuid):
    return '"c%d_%s"' % (index, uuid)


def _panel(index, panel):
    lines = ['  subgraph "cluster_%d" {' % index,
             '    label=%s;' % _title(panel),
             '    labeljust="l";']
    present = set()
    for rp in panel.providers:
        present |= rp.traits
        attrs = ['label=%s' % _provider_label(rp, panel.required)]
        if rp.traits & panel.required:
            attrs.append('color="%s"' % GREEN)
        if rp.usage:
            attrs.append('penwidth=2.5')
        if rp.sharing:
            attrs.append('shape=cylinder')
        lines.append('    %s [%s];' % (
            _node_id(index, rp.uuid), ', '.join(attrs)))
    for rp in panel.providers:
        if rp.parent:
            lines.append('    %s -> %s;' % (_node_id(index, rp.parent),
                                            _node_id(index, rp.uuid)))
        elif rp.sharing:
            lines.append('    %s -> %s [style=dashed, arrowhead=none, '
                         'label="aggregate"];' % (
                             _node_id(index, panel.root),
                             _node_id(index, rp.uuid)))
    missing = _missing_label(panel, present)
    if missing:
        lines.append('    "c%d_missing" [shape=note, color="%s", label=%s];'
                     % (index, RED, missing))
    lines.append('  }')
    return lines


def render(panels):
    """Return one DOT digraph with a cluster per :class:`Panel`.

    The text has no final newline: the output formatter adds it.
    """
    lines = ['digraph "nova-image-traits" {',
             '  graph [rankdir=TB, fontname="Helvetica", fontsize=11];',
             '  node [shape=box, style=rounded, fontname="Helvetica", '
             'fontsize=10];',
             '  edge [color="#57606a"];']
    for index, panel in enumerate(panels):
        lines.extend(_panel(index, panel))
    lines.append('}')
    return '\n'.join(lines)


# -- reading a case's tree back from placement -------------------------------

def panel(cloud, case, request, decisions):
    """A :class:`Panel` for a case of a running simulated cloud.

    The host's tree and sharing providers are read back from placement.

    :param cloud: a :class:`~.run.SimulatedCloud`
    :param request: the case's :class:`RebuildRequest`
    :param decisions: the case's decisions, one per strategy
    """
    b, root = cloud.builder, request.compute_node_uuid
    host = cloud.scenario.by_name('hosts')[request.host]
    sharing = cloud.sharing(host)
    usage = cloud.allocations[request.instance_uuid]
    found = b.get('/resource_providers?in_tree=%s' % root)[
        'resource_providers'] + [b.get('/resource_providers/%s' % rp)
                                 for rp in sorted(sharing)]
    providers = []
    for rp in found:
        path = '/resource_providers/%s' % rp['uuid']
        providers.append(Provider(
            uuid=rp['uuid'], name=rp['name'],
            parent=rp.get('parent_provider_uuid'),
            traits=frozenset(b.get(path + '/traits')['traits']),
            inventory={rc: v['total'] for rc, v in
                       b.get(path + '/inventories')['inventories'].items()},
            sharing=rp['uuid'] in sharing, usage=usage.get(rp['uuid'], {})))
    wanted = nit_traits.image_traits(request.image_properties)
    # The traits nova derives the image needs count as required here too.
    derived = frozenset(r.trait for r in (
        request.derived.traits if request.derived else ()) if not r.forbidden)
    return Panel(
        title='%s: rebuild %s (on %s) with %s' % (
            case.name, case.server, host.name, case.image),
        root=root, providers=providers, required=wanted.required | derived,
        forbidden=request.flavor.forbidden_traits,
        invalid=tuple(prop for prop, _why in wanted.invalid),
        verdicts=[(d.strategy, d.outcome, d.fallback) for d in decisions])
