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

The one module that words a verdict. The engine says what was decided
and hands over what it found; :class:`Wording` turns each refusal into a
:class:`Reason`, and :func:`log_values` fills the decision's log line. A
reason names what the image asks and what the host lacks, for callers
who may read the host's detail; the caller says so (``host_detail``), so
that the engine knows nothing of nova's policy. The reasons fit nova's
column (:mod:`nova_image_traits.listing`).
"""

import typing as ty

from nova_image_traits import exception
from nova_image_traits.i18n import _
from nova_image_traits import listing
from nova_image_traits import traits as nit_traits

#: The most invalid properties the decision log line names.
MAX_LOGGED_INVALID = 16

#: The detail of an acceptance without a question for placement.
NOTHING_ASKED = 'the new image requires no traits'
RESOURCES_HELD = ('the server holds the resources the new image asks for, '
                  'and it requires no traits')

#: The decision's log line, one INFO line; :func:`log_values` fills it.
LOG_LINE = ('Rebuild image traits decision: outcome=%(outcome)s '
            'allowed=%(allowed)s strategy=%(strategy)s '
            'fallback=%(fallback)s instance=%(instance)s host=%(host)s '
            'node=%(node)s required=%(required)s missing=%(missing)s '
            'providers=%(providers)s requests=%(requests)d '
            'elapsed_ms=%(elapsed_ms).1f cause=%(cause)s derived=%(derived)s '
            'requirements=%(requirements)s detail=%(detail)s')


class Reason(ty.NamedTuple):
    """A refusal, worded.

    :ivar cause: short and machine-readable, for the log line
    :ivar message: for the user, fitted to nova's column
    :ivar detail: for the operator's log line, never shown to users
    """
    cause: str
    message: str
    detail: str = ''

    def refuse(self, decision, outcome):
        """Refuse ``decision`` with ``outcome``, for this reason.

        :param decision: a :class:`~nova_image_traits.decision.Decision`
        """
        decision.outcome = outcome
        decision.allowed = False
        decision.cause, decision.message, decision.detail = self


def log_values(decision):
    """The values of :data:`LOG_LINE` for one decision.

    :param decision: a :class:`~nova_image_traits.decision.Decision`
    """
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
            'elapsed_ms': decision.elapsed * 1000.0,
            'cause': decision.cause or '-',
            'derived': decision.derived,
            'requirements': ','.join(
                [r.logged() for r in decision.requirements] +
                [n.logged() for n in decision.resources]) or '-',
            'detail': decision.detail or '-'}


def user_reason(decision):
    """:meth:`~nova_image_traits.decision.Decision.user_reason`."""
    if decision.allowed:
        return _('The rebuild was accepted by image traits strategy '
                 '%(strategy)s.') % {'strategy': decision.decided_by}
    return decision.message or _('The rebuild was refused.')


def fallback_detail(first, name, verdict):
    """The log line's detail when ``name`` decided after ``first``."""
    return '%s; %s: %s' % (first.detail, name,
                           verdict.detail or verdict.outcome)


def _all_image_traits(requirements):
    """Whether every requirement is a ``trait:`` property required."""
    return all(not r.derived and not r.forbidden for r in requirements)


class Wording:
    """The reasons of one decision, for one caller.

    :param host_detail: whether the caller may read the host's detail
        (which traits it lacks); the reasons of a caller who may not are
        not written yet, so it must be True
    :raises ValueError: when ``host_detail`` is not True
    """

    def __init__(self, host_detail=True):
        if host_detail is not True:
            raise ValueError('only reasons with host detail are written')
        self.host_detail = host_detail

    def misconfigured(self, error):
        return Reason('misconfigured', _(
            'The image traits of the new image could not be checked because '
            'the check is misconfigured; please contact your cloud '
            'operator.'), str(error))

    def internal_error(self, error):
        return Reason('internal-error', _(
            'The image traits of the new image could not be checked because '
            'of an internal error; please contact your cloud operator.'),
            '%s: %s' % (type(error).__name__, error))

    def invalid(self, invalid):
        """:param invalid: ``(property, why)`` pairs"""
        return Reason('invalid-image-trait', listing.invalid_reason(invalid),
                      _invalid_detail(invalid))

    def refused_by_request_filter(self, refusal):
        return Reason('refused-by-request-filter', listing.cut(
            _('A boot of the new image would be refused: %s') % refusal),
            'a nova request filter refused the new image')

    def too_many(self, count, limit):
        return Reason('too-many-traits', _(
            'The image requires %(count)d traits; at most %(limit)d are '
            'accepted ([image_traits] max_image_traits).') % {
                'count': count, 'limit': limit})

    def conflicting(self, pairs):
        """:param pairs: ``(required, forbidden)`` requirements"""
        names = frozenset(wanted.trait for wanted, _no in pairs)
        if all(no.via == 'flavor' for _yes, no in pairs):
            cause = 'forbidden-by-flavor'
            what = _("required by the new image, forbidden by the server's "
                     "flavor")
            advice = _('Rebuild with another image, or create a new server '
                       'with this image and another flavor.')
        else:
            cause = 'conflicting-requirements'
            what = _('both required and forbidden by the new image')
            advice = _('Fix the image properties, then rebuild again.')
        return Reason(cause, listing.trait_reason(names, what, advice),
                      '; '.join('%s against %s' % (yes.logged(), no.logged())
                                for yes, no in pairs))

    def resources_unknown(self, resources):
        return Reason(
            'resources-unknown',
            listing.resource_reason(resources, _(
                'whether this server holds it could not be decided')),
            'placement holds no allocations for the server on this '
            'compute node')

    def resources_not_held(self, short, held):
        """:param held: a Counter of what the server holds, by class"""
        return Reason('resources-not-held', listing.resource_reason(short),
                      '; '.join('%s:%d asked by %s, %d held' % (
                          n.resource_class, n.amount,
                          nit_traits.quote(n.cause())[1:-1],
                          held[n.resource_class]) for n in short))

    def query_too_long(self, error):
        return Reason('query-too-long', _(
            'The new image requires too many or too long traits to check (a '
            'placement query of %(length)d bytes, over the limit of '
            '%(limit)d).') % error.kwargs)

    def placement_failed(self, error):
        return Reason(error.cause, _placement_failed(error), error.message)

    def unmet(self, strategy, unmet, missing, detail):
        """The refusal naming what ``strategy`` found unmet."""
        lacks = strategy.lacks or _("missing on this server's host")
        if not unmet or _all_image_traits(unmet):
            # NOTE(founders): the image's own trait: properties, as always.
            message = listing.missing_message(
                missing or [r.trait for r in unmet], lacks)
        else:
            message = listing.requirement_reason(
                unmet, strategy.unmet_phrase(unmet))
        return Reason('traits-missing', message, detail)

    def inconclusive(self, asked, required, detail):
        if _all_image_traits(asked):
            message = listing.trait_reason(required, _(
                'required by the new image; whether this server has them '
                'could not be decided'))
        else:
            message = listing.requirement_reason(asked, _(
                'whether this server meets them could not be decided'))
        return Reason('inconclusive', message, detail)


def _placement_failed(error):
    """The reason for a refusal because placement failed: what to do."""
    if error.transient:
        return _('The image traits of the new image could not be checked: '
                 'placement failed (%(cause)s). The server keeps its current '
                 'image; try again later.') % {'cause': error.cause}
    if isinstance(error, exception.PlacementProviderNotFound):
        return _('The image traits of the new image could not be checked: '
                 "placement has no resource provider for this server's "
                 'host (%(cause)s). The server keeps its current image; ask '
                 'the cloud operator.') % {'cause': error.cause}
    return _('The image traits of the new image could not be checked '
             '(%(cause)s), and trying again will not help. The server keeps '
             'its current image; ask the cloud operator.') % {
                 'cause': error.cause}


def _invalid_detail(invalid):
    """The log line's list: every invalid property, up to a bound."""
    # NOTE(founders): a reason may repeat part of the name; escape it as well.
    parts = ['%s (%s)' % (nit_traits.quote(prop),
                          nit_traits.quote(why)[1:-1])
             for prop, why in invalid[:MAX_LOGGED_INVALID]]
    text = '%d invalid trait properties: %s' % (
        len(invalid), '; '.join(parts))
    if len(invalid) > MAX_LOGGED_INVALID:
        text += '; and %d more' % (len(invalid) - MAX_LOGGED_INVALID)
    return text
