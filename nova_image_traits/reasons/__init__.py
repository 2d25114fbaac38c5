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
"""What a decision says: the user's reason, and the detail of its log line.

The one place that words a verdict. The engine says what was decided and
hands over what it found; :mod:`.wording` turns each refusal into a
:class:`~.wording.Reason`, with :mod:`.lists` for the reasons that list
names, and this module renders a decision's reason for one caller
(:func:`user_reason`) and fills its log line (:func:`log_values`). The
caller says whether it may read the host's detail (``host_detail``), so
that the engine knows nothing of nova's policy. The reasons fit nova's
column (:mod:`nova_image_traits.listing`).
"""

from nova_image_traits.i18n import _
from nova_image_traits import listing

#: The detail of an acceptance without a question for placement.
NOTHING_ASKED = 'the new image requires no traits'
RESOURCES_HELD = ('the server holds the resources the new image asks for, '
                  'and it requires no traits')

#: The decision's log line, one INFO line; :func:`log_values` fills it.
LOG_LINE = ('Rebuild image traits decision: outcome=%(outcome)s '
            'allowed=%(allowed)s strategy=%(strategy)s '
            'fallback=%(fallback)s instance=%(instance)s host=%(host)s '
            'node=%(node)s required=%(required)s missing=%(missing)s '
            'providers=%(providers)s requests=%(requests)d known=%(known)d '
            'elapsed_ms=%(elapsed_ms).1f cause=%(cause)s derived=%(derived)s '
            'requirements=%(requirements)s detail=%(detail)s')


def log_values(decision):
    """The values of :data:`LOG_LINE` for one decision.

    The log line is the operator's: it names everything, whoever asked.
    The image property each derived requirement comes from is worked out
    for a refusal only (:mod:`nova_image_traits.sources`); an accepted
    rebuild's line reads ``-`` in its place.

    :param decision: a :class:`~nova_image_traits.decision.Decision`
    """
    attribute = not decision.allowed
    return {'outcome': decision.outcome,
            'allowed': decision.allowed,
            'strategy': decision.strategy,
            'fallback': decision.fallback or '-',
            'instance': decision.instance_uuid,
            'host': decision.host or '-',
            'node': decision.compute_node_uuid,
            'required': ','.join(sorted(decision.required)) or '-',
            'missing': ','.join(sorted(decision.missing)) or '-',
            'providers': ','.join(decision.providers) or '-',
            'requests': decision.requests,
            'known': decision.known,
            'elapsed_ms': decision.elapsed * 1000.0,
            'cause': decision.cause or '-',
            'derived': decision.derived,
            'requirements': ','.join(
                [r.logged(attribute) for r in decision.requirements] +
                [n.logged(attribute) for n in decision.resources]) or '-',
            'detail': decision.detail or '-'}


def user_reason(decision, *, host_detail):
    """The reason one caller reads of ``decision``.

    :param decision: a :class:`~nova_image_traits.decision.Decision`
    :param host_detail: whether the caller may read the host's detail.
        When it may not, a refusal for what placement found of this host
        or server (:attr:`~.wording.Reason.names_host`) reads
        :func:`host_lacks`, which names no trait, aggregate or unmet
        requirement; every other reason names only what the image, the
        flavor or the configuration says, and reads the same.
    """
    if decision.allowed:
        return _('The rebuild was accepted by image traits strategy '
                 '%(strategy)s.') % {'strategy': decision.decided_by}
    if decision.names_host and not host_detail:
        return host_lacks()
    return decision.message or _('The rebuild was refused.')


def host_lacks():
    """The refusal of a caller who may not read the host's detail."""
    return listing.cut(_(
        "This server's host does not offer what the new image requires. "
        'Rebuild with another image, or ask your cloud operator.'))


def check_failed():
    """The conductor's refusal when its check itself failed.

    The hook words it without a decision, after
    :func:`~nova_image_traits.engine.fails_open` said no.
    """
    return _('The image traits of the new image could not be checked '
             'because of an internal error.')


def fallback_detail(first, name, verdict):
    """The log line's detail when ``name`` decided after ``first``."""
    return '%s; %s: %s' % (first.detail, name,
                           verdict.detail or verdict.outcome)
