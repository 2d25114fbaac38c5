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
"""The outcome of a rebuild decision, for logs and for users."""

import dataclasses
import typing as ty

from oslo_log import log as logging

from nova_image_traits.i18n import _

LOG = logging.getLogger(__name__)

ACCEPT = 'accept'
REJECT = 'reject'
INCONCLUSIVE = 'inconclusive'
ERROR = 'error'
OUTCOMES = (ACCEPT, REJECT, INCONCLUSIVE, ERROR)

#: Nova stores a refusal in 255 bytes of UTF-8 (instance faults and action
#: event details, ``nova.compute.utils.exception_to_dict``), after
#: ``NoValidHost``'s own "No valid host was found. ", which is 25 bytes in
#: English and may be longer translated: the reason gets 200 bytes.
MAX_REASON = 200


def fits(text):
    """Whether ``text`` fits in :data:`MAX_REASON` bytes of UTF-8."""
    return len(text.encode('utf-8')) <= MAX_REASON


def _cut(text, limit):
    """``text`` cut to at most ``limit`` bytes of UTF-8, whole characters."""
    return text.encode('utf-8')[:limit].decode('utf-8', 'ignore')


def cut(text):
    """``text``, or its start ending in "...", within :data:`MAX_REASON`."""
    if fits(text):
        return text
    return _cut(text, MAX_REASON - 3) + '...'


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What one strategy concluded.

    :ivar outcome: one of :data:`OUTCOMES`
    :ivar missing: the traits whose requirement the host does not meet
        (missing where required, present where forbidden)
    :ivar providers: resource provider UUIDs the strategy consulted
    :ivar detail: a short technical explanation, for logs and reasons
    :ivar unmet: the unmet
        :class:`~nova_image_traits.requirements.Requirement` objects; a
        strategy that sets only ``missing`` has them found by name
    """
    outcome: str
    missing: frozenset = frozenset()
    providers: tuple = ()
    detail: str = ''
    unmet: tuple = ()


@dataclasses.dataclass
class Decision:
    """A rebuild decision: what was decided, how, and at what cost.

    :ivar outcome: the deciding verdict's outcome, one of :data:`OUTCOMES`
    :ivar allowed: whether the rebuild may go ahead
    :ivar strategy: the configured strategy
    :ivar fallback: the fallback strategy that decided, if one did
    :ivar required: traits the new image requires (its ``trait:``
        properties and what nova derives)
    :ivar requirements: every
        :class:`~nova_image_traits.requirements.Requirement` judged
    :ivar resources: the
        :class:`~nova_image_traits.requirements.ResourceNeed` objects judged
    :ivar derived: ``judged``, ``off`` (``[image_traits]
        judge_derived_requirements``) or ``unknown`` (nova's code could not
        derive them here)
    :ivar missing: traits (or resource classes) whose requirement the host
        was found not to meet
    :ivar unmet: the unmet requirements
    :ivar providers: resource providers consulted, in order
    :ivar requests: placement requests sent for this decision
    :ivar elapsed: seconds spent deciding
    :ivar cause: a short machine-readable cause of a refusal or an error
    :ivar transient: whether the error may pass by itself, so that the
        same request may succeed later
    :ivar detail: technical detail for operators (never shown to users)
    :ivar message: the user-facing explanation, without advice
    """
    outcome: str
    allowed: bool
    strategy: str
    instance_uuid: ty.Optional[str] = None
    compute_node_uuid: ty.Optional[str] = None
    host: ty.Optional[str] = None
    fallback: ty.Optional[str] = None
    required: frozenset = frozenset()
    requirements: tuple = ()
    resources: tuple = ()
    derived: str = '-'
    missing: frozenset = frozenset()
    unmet: tuple = ()
    providers: tuple = ()
    requests: int = 0
    elapsed: float = 0.0
    cause: ty.Optional[str] = None
    transient: bool = False
    detail: str = ''
    message: str = ''

    @property
    def decided_by(self):
        """The strategy whose verdict stands."""
        return self.fallback or self.strategy

    def user_reason(self):
        """Return a reason fit for a ``NoValidHost`` fault.

        It names the missing traits and the strategy and says what the user
        can do. It never contains placement URLs, tokens or stack traces.
        """
        if self.allowed:
            return _('The rebuild was accepted by image traits strategy '
                     '%(strategy)s.') % {'strategy': self.decided_by}
        return self.message or _('The rebuild was refused.')

    def log(self):
        """Log the decision as one INFO line."""
        LOG.info(
            'Rebuild image traits decision: outcome=%(outcome)s '
            'allowed=%(allowed)s strategy=%(strategy)s '
            'fallback=%(fallback)s instance=%(instance)s host=%(host)s '
            'node=%(node)s required=%(required)s missing=%(missing)s '
            'providers=%(providers)s requests=%(requests)d '
            'elapsed_ms=%(elapsed_ms).1f cause=%(cause)s derived=%(derived)s '
            'requirements=%(requirements)s detail=%(detail)s',
            {'outcome': self.outcome,
             'allowed': self.allowed,
             'strategy': self.strategy,
             'fallback': self.fallback or '-',
             'instance': self.instance_uuid,
             'host': self.host or '-',
             'node': self.compute_node_uuid,
             'required': ','.join(sorted(self.required)) or '-',
             'missing': ','.join(sorted(self.missing)) or '-',
             'providers': ','.join(self.providers) or '-',
             'requests': self.requests,
             'elapsed_ms': self.elapsed * 1000.0,
             'cause': self.cause or '-',
             'derived': self.derived,
             'requirements': ','.join(
                 [r.logged() for r in self.requirements] +
                 [n.logged() for n in self.resources]) or '-',
             'detail': self.detail or '-'})


def trait_reason(traits, what, advice=None):
    """Return a user reason naming ``traits`` first, that :func:`fits`.

    Nova keeps only 255 characters of a refusal, so the traits come first,
    then ``what`` is wrong with them, then the advice. When everything does
    not fit, the advice is dropped first, then the traits that do not fit
    are counted ("and 3 more"); the decision's log line names them all.

    :param traits: the trait names
    :param what: what is wrong with them, e.g. "missing on this server's
        compute node"
    :param advice: what the user can do; the default says to use another
        image or create a new server
    """
    return _listed_reason(sorted(traits), ', ', what, advice)


def _listed_reason(items, sep, what, advice):
    """``<items>: <what>. <advice>``, cut as :func:`trait_reason` says."""
    if advice is None:
        advice = _('Rebuild with another image, or create a new server with '
                   'this one.')
    names = list(items)
    for shown in range(len(names), 0, -1):
        listed = sep.join(names[:shown])
        if shown < len(names):
            listed = _('%(listed)s and %(count)d more') % {
                'listed': listed, 'count': len(names) - shown}
        text = _('%(traits)s: %(what)s.') % {'traits': listed, 'what': what}
        for reason in ('%s %s' % (text, advice), text):
            if fits(reason):
                return reason
    # NOTE(founders): the first name alone is too long for the column: its
    # start.
    more = ''
    if len(names) > 1:
        more = _(' and %d more') % (len(names) - 1)
    room = MAX_REASON - len((_('%(traits)s: %(what)s.') % {
        'traits': more, 'what': what}).encode('utf-8')) - 3
    listed = _cut(names[0], max(room, 16)) + '...' + more
    text = _('%(traits)s: %(what)s.') % {'traits': listed, 'what': what}
    return _cut(text, MAX_REASON)


def _clause(requirement):
    """"hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0", for users."""
    values = {'cause': requirement.cause(), 'trait': requirement.trait}
    if not requirement.derived:
        return _('the new image requires %(trait)s') % values
    if requirement.forbidden:
        return _('%(cause)s forbids %(trait)s') % values
    return _('%(cause)s needs %(trait)s') % values


def requirement_reason(unmet, what, advice=None):
    """A user reason naming each unmet requirement by what caused it.

    "hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0: missing on this
    server's compute node." It :func:`fits`, as :func:`trait_reason`.

    :param unmet: :class:`~nova_image_traits.requirements.Requirement`
        objects
    :param what: what the strategy found of them
    """
    return _listed_reason([_clause(r) for r in sorted(unmet)], '; ', what,
                          advice)


def resource_reason(needs, what=None):
    """The refusal of an image that needs resources the server lacks.

    :param needs: :class:`~nova_image_traits.requirements.ResourceNeed`
        objects
    :param what: what is wrong; by default that the server does not hold
        them
    """
    return _listed_reason(
        [_('%(cause)s needs %(rc)s') % {'cause': n.cause(),
                                        'rc': n.resource_class}
         for n in needs], '; ',
        what or _('this server does not hold it, and a rebuild keeps the '
                  'resources it holds'),
        _('Create a new server with this image instead.'))


def missing_message(missing, lacks):
    """User-facing text for traits the strategy found missing.

    :param missing: the trait names
    :param lacks: what the strategy judged, as the strategy's ``lacks``
        phrase ("missing on the resources this server uses")
    """
    return trait_reason(missing, _('required by the new image, %s') % lacks)
