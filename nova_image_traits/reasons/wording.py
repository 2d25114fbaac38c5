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
"""The reason of each refusal the engine makes.

Each function takes what the engine found and returns a :class:`Reason`:
text only. The engine sets the decision's outcome; the caller's view of
the reason is :func:`nova_image_traits.reasons.user_reason`'s.
"""

import typing as ty

from nova_image_traits import exception
from nova_image_traits.i18n import _
from nova_image_traits import listing
from nova_image_traits.reasons import lists
from nova_image_traits import traits as nit_traits

#: The most invalid properties the decision log line names.
MAX_LOGGED_INVALID = 16


class Reason(ty.NamedTuple):
    """A refusal, worded.

    :ivar cause: short and machine-readable, for the log line
    :ivar message: for a caller who may read the host's detail, fitted to
        nova's column
    :ivar detail: for the operator's log line, never shown to users
    :ivar names_host: whether ``message`` tells what placement found of
        the host or the server (which requirements are unmet), so that a
        caller who may not read the host's detail reads
        :func:`~nova_image_traits.reasons.host_lacks` instead
    """
    cause: str
    message: str
    detail: str = ''
    names_host: bool = False


def _all_image_traits(requirements):
    """Whether every requirement is a ``trait:`` property required."""
    return all(not r.derived and not r.forbidden for r in requirements)


def misconfigured(error):
    return Reason('misconfigured', _(
        'The image traits of the new image could not be checked because '
        'the check is misconfigured; please contact your cloud '
        'operator.'), str(error))


def internal_error(error):
    return Reason('internal-error', _(
        'The image traits of the new image could not be checked because '
        'of an internal error; please contact your cloud operator.'),
        '%s: %s' % (type(error).__name__, error))


def invalid(pairs):
    """:param pairs: ``(property, why)`` pairs"""
    return Reason('invalid-image-trait', lists.invalid_reason(pairs),
                  _invalid_detail(pairs))


def refused_by_request_filter(refusal):
    return Reason('refused-by-request-filter', listing.cut(
        _('A boot of the new image would be refused: %s') % refusal),
        'a nova request filter refused the new image')


def too_many(count, limit):
    return Reason('too-many-traits', _(
        'The image requires %(count)d traits; at most %(limit)d are '
        'accepted ([image_traits] max_image_traits).') % {
            'count': count, 'limit': limit})


def conflicting(pairs):
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
    return Reason(cause, lists.trait_reason(names, what, advice),
                  '; '.join('%s against %s' % (yes.logged(), no.logged())
                            for yes, no in pairs))


def resources_unknown(resources):
    return Reason(
        'resources-unknown',
        lists.resource_reason(resources, _(
            'whether this server holds it could not be decided')),
        'placement holds no allocations for the server on this '
        'compute node')


def resources_not_held(short, held):
    """:param held: a Counter of what the server holds, by class"""
    return Reason('resources-not-held', lists.resource_reason(short),
                  '; '.join('%s:%d asked by %s, %d held' % (
                      n.resource_class, n.amount,
                      nit_traits.quote(n.cause())[1:-1],
                      held[n.resource_class]) for n in short),
                  names_host=True)


def query_too_long(error):
    return Reason('query-too-long', _(
        'The new image requires too many or too long traits to check (a '
        'placement query of %(length)d bytes, over the limit of '
        '%(limit)d).') % error.kwargs)


def placement_failed(error):
    return Reason(error.cause, _placement_failed(error), error.message)


def unmet(strategy, requirements, missing, detail):
    """The refusal naming what ``strategy`` found unmet.

    :param requirements: the unmet requirements
    :param missing: the names of the traits the strategy found missing
    """
    lacks = strategy.lacks or _("missing on this server's host")
    if not requirements or _all_image_traits(requirements):
        # NOTE(founders): the image's own trait: properties, as always.
        message = lists.missing_message(
            missing or [r.trait for r in requirements], lacks)
    else:
        message = lists.requirement_reason(
            requirements, strategy.unmet_phrase(requirements))
    return Reason('traits-missing', message, detail, names_host=True)


def inconclusive(asked, required, detail):
    if _all_image_traits(asked):
        message = lists.trait_reason(required, _(
            'required by the new image; whether this server has them '
            'could not be decided'))
    else:
        message = lists.requirement_reason(asked, _(
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
