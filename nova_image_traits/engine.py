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
"""The decision engine: one rebuild, one strategy, one logged decision.

:func:`decide` never raises for bad input or a placement fault: it returns
a :class:`~nova_image_traits.decision.Decision` whose ``allowed`` says
what to do and whose reason says why. It imports nothing from nova.
"""

import collections
import dataclasses
import time

from oslo_config import cfg
from oslo_log import log as logging

from nova_image_traits import conf as nit_conf
from nova_image_traits import decision as nit_decision
from nova_image_traits import exception
from nova_image_traits.i18n import _
from nova_image_traits import placement
from nova_image_traits import requirements as nit_requirements
from nova_image_traits import strategies
from nova_image_traits.strategies import base
from nova_image_traits import traits as nit_traits

LOG = logging.getLogger(__name__)


def decide(request, conf=None, client=None):
    """Decide whether ``request`` may rebuild on its current host.

    :param request: a :class:`~nova_image_traits.request.RebuildRequest`
    :param conf: the ConfigOpts to read ``[image_traits]`` and
        ``[placement]`` from; the global ``oslo_config.cfg.CONF`` (nova's
        inside nova) by default
    :param client: a :class:`~nova_image_traits.placement.PlacementClient`;
        by default the process-wide one built from ``conf``, created only
        when a strategy needs placement
    :returns: a :class:`~nova_image_traits.decision.Decision`, logged
    """
    conf = cfg.CONF if conf is None else conf
    _register(conf)
    started = time.monotonic()
    result = nit_decision.Decision(
        outcome=nit_decision.ERROR, allowed=False, strategy='-',
        instance_uuid=request.instance_uuid,
        compute_node_uuid=request.compute_node_uuid, host=request.host)
    state = {}
    try:
        opts = conf.image_traits
        result.strategy = opts.strategy
        result.outcome, result.allowed = nit_decision.ACCEPT, True
        _decide(request, conf, opts, client, result, state)
    except (cfg.Error, exception.StrategyNotFound) as e:
        _refuse(result, nit_decision.ERROR, 'misconfigured', _(
            'The image traits of the new image could not be checked because '
            'the check is misconfigured; please contact your cloud '
            'operator.'), detail=str(e))
    except Exception as e:
        # NOTE(founders): a bug, or an answer no check foresaw: say so, and
        # follow on_placement_error rather than let it reach nova.
        LOG.exception('Unexpected failure deciding the rebuild of %s',
                      request.instance_uuid)
        _refuse(result, nit_decision.ERROR, 'internal-error',
                _('The image traits of the new image could not be checked '
                  'because of an internal error; please contact your cloud '
                  'operator.'),
                detail='%s: %s' % (type(e).__name__, e))
        result.allowed = fails_open(conf)
    finally:
        if 'session' in state:
            result.requests = state['session'].requests
        result.elapsed = time.monotonic() - started
        result.log()
    return result


def _register(conf):
    # NOTE(founders): registering options clears the ConfigOpts value cache
    # (all of nova's, inside nova), so only do it when the group is missing.
    if 'image_traits' not in conf:
        nit_conf.register_opts(conf)


def fails_open(conf):
    """Whether an unexpected failure should let a rebuild through.

    The filter and the conductor hook use it when something other than
    placement fails around :func:`decide`. It follows
    ``[image_traits] on_placement_error``, and fails closed when even the
    options cannot be read.

    :param conf: the ConfigOpts the decision reads
    """
    try:
        _register(conf)
        return conf.image_traits.on_placement_error == 'accept'
    except Exception:
        LOG.exception('Cannot read [image_traits] on_placement_error; '
                      'failing closed.')
        return False


def _refuse(result, outcome, cause, message, detail=''):
    result.outcome = outcome
    result.allowed = False
    result.cause = cause
    result.message = message
    result.detail = detail


def _decide(request, conf, opts, client, result, state):
    wanted = nit_traits.image_traits(request.image_properties)
    derived = request.derived if opts.judge_derived_requirements else None
    result.derived = ('off' if not opts.judge_derived_requirements else
                      'judged' if derived is not None else 'unknown')
    asked = nit_requirements.merge(
        nit_requirements.from_image_traits(wanted.required),
        derived.traits if derived else ())
    result.requirements = asked
    result.resources = derived.resources if derived else ()
    result.required = frozenset(r.trait for r in asked if not r.forbidden)
    if wanted.ignored:
        LOG.debug('Ignoring image properties %s: only the value "required" '
                  'is read, as in nova.',
                  ', '.join(nit_traits.quote(k) for k in wanted.ignored))
    if wanted.invalid:
        _refuse(result, nit_decision.REJECT, 'invalid-image-trait',
                _invalid_message(wanted.invalid),
                detail=_invalid_detail(wanted.invalid))
        return
    if derived and derived.refusal:
        _refuse(result, nit_decision.REJECT, 'refused-by-request-filter',
                nit_decision.cut(_('A boot of the new image would be '
                                   'refused: %s') % derived.refusal),
                detail='a nova request filter refused the new image')
        return
    if not asked and not result.resources:
        result.detail = 'the new image requires no traits'
        return
    if len(wanted.required) > opts.max_image_traits:
        _refuse(result, nit_decision.REJECT, 'too-many-traits', _(
            'The image requires %(count)d traits; at most %(limit)d are '
            'accepted ([image_traits] max_image_traits).') % {
                'count': len(wanted.required),
                'limit': opts.max_image_traits})
        return
    if _conflicting(request, asked, result):
        return

    try:
        if client is None:
            client = placement.get_client(conf, opts.decision_timeout)
        session = client.start(
            opts.decision_timeout, opts.max_url_length,
            version_ttl=opts.placement_version_ttl,
            global_request_id=request.global_request_id)
        state['session'] = session
        ctx = base.Context(request, result.required, session, asked)
        if _lacks_resources(ctx, result):
            return
        if not asked:
            result.detail = ('the server holds the resources the new image '
                             'asks for, and it requires no traits')
            return
        verdict = _run(opts.strategy, 'strategy', ctx)
        if (verdict.outcome == nit_decision.INCONCLUSIVE and
                opts.fallback_strategy != opts.strategy):
            LOG.debug('Strategy %(s)s is inconclusive (%(d)s); falling back '
                      'to %(f)s', {'s': opts.strategy, 'd': verdict.detail,
                                   'f': opts.fallback_strategy})
            first = verdict
            name = result.fallback = opts.fallback_strategy
            verdict = _run(name, 'fallback_strategy', ctx)
            verdict = dataclasses.replace(
                verdict,
                providers=tuple(dict.fromkeys(
                    (*first.providers, *verdict.providers))),
                detail='%s; %s: %s' % (first.detail, name,
                                       verdict.detail or verdict.outcome))
    except exception.RequestTooLarge as e:
        _refuse(result, nit_decision.REJECT, 'query-too-long',
                _('The new image requires too many or too long traits to '
                  'check (a placement query of %(length)d bytes, over the '
                  'limit of %(limit)d).') % e.kwargs)
        return
    except exception.PlacementError as e:
        _refuse(result, nit_decision.ERROR, e.cause, _placement_failed(e),
                detail=e.message)
        result.transient = e.transient
        result.allowed = opts.on_placement_error == 'accept'
        return

    result.missing, result.providers = verdict.missing, verdict.providers
    if verdict.outcome == nit_decision.ACCEPT:
        result.detail = verdict.detail
    elif verdict.outcome == nit_decision.REJECT:
        strategy = strategies.load(result.decided_by)
        result.unmet = verdict.unmet or tuple(
            r for r in asked if r.trait in verdict.missing)
        _refuse(result, verdict.outcome, 'traits-missing',
                _unmet_message(strategy, result.unmet, verdict.missing),
                detail=verdict.detail)
    elif all(not r.derived and not r.forbidden for r in asked):
        _refuse(result, verdict.outcome, 'inconclusive',
                nit_decision.trait_reason(
                    result.required,
                    _('required by the new image; whether this server '
                      'has them could not be decided')),
                detail=verdict.detail)
    else:
        _refuse(result, verdict.outcome, 'inconclusive',
                nit_decision.requirement_reason(
                    asked, _('whether this server meets them could not be '
                             'decided')),
                detail=verdict.detail)


def _unmet_message(strategy, unmet, missing):
    """The refusal naming what the strategy found unmet."""
    lacks = strategy.lacks or _("missing on this server's host")
    if not unmet or all(not r.derived and not r.forbidden for r in unmet):
        # NOTE(founders): the image's own trait: properties, as always.
        return nit_decision.missing_message(
            missing or [r.trait for r in unmet], lacks)
    return nit_decision.requirement_reason(unmet, strategy.unmet_phrase(unmet))


def _conflicting(request, asked, result):
    """Refuse what placement refuses: a trait required and forbidden alike.

    Placement checks each request group alone (``_check_forbidden``), so a
    ``trait1:X=forbidden`` in the flavor does not conflict with an image
    trait ``X``, which belongs to the unsuffixed group.
    """
    # NOTE(founders): the flavor's own groups, whatever nova derived from the
    # image (with judge_derived_requirements off, nova's query keeps it).
    query = request.flavor.resource_query(request.is_volume_backed)
    flavor = [nit_requirements.Requirement(
        name, scope, True, sources=('flavor',), via='flavor')
        for names, scope in ((query.unsuffixed.forbidden,
                              nit_requirements.UNSUFFIXED),
                             (query.root_forbidden, nit_requirements.ROOT))
        for name in names]
    pairs = nit_requirements.conflicts(nit_requirements.merge(flavor, asked))
    if not pairs:
        return False
    names = frozenset(wanted.trait for wanted, _no in pairs)
    result.missing = names
    result.unmet = tuple(wanted for wanted, _no in pairs)
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
    _refuse(result, nit_decision.REJECT, cause,
            nit_decision.trait_reason(names, what, advice),
            detail='; '.join('%s against %s' % (yes.logged(), no.logged())
                             for yes, no in pairs))
    return True


def _held_here(ctx):
    """What the server holds in the compute node's tree, by class.

    When the allocations can be one placement candidate (the node holds a
    part and no class is held twice) they are all this host's. Otherwise
    (an unfinished move also holds another node's) only providers of the
    node's tree count, one ``in_tree`` request: nova derives no resource a
    sharing provider serves.

    :returns: a Counter, or None when nothing is held here
    """
    allocations = base.Strategy.held_allocations(ctx)
    if not allocations:
        return None
    root = ctx.request.compute_node_uuid
    classes = collections.Counter(
        rc for res in allocations.values() for rc, n in res.items() if n)
    twice = any(count > 1 for count in classes.values())
    if root not in allocations or twice:
        tree = set(base.Strategy.providers(ctx, [('in_tree', root)], '1.14'))
        allocations = {rp: res for rp, res in allocations.items()
                       if rp in tree}
    held = collections.Counter()
    for amounts in allocations.values():
        held.update(amounts)
    return held or None


def _lacks_resources(ctx, result):
    """Refuse an image that needs resources the server does not hold.

    A rebuild keeps the server's allocations, so it cannot add any: the
    counterpart of nova's own ``_validate_numa_rebuild``. One request,
    ``GET /allocations/{server}``, which the strategies then reuse; only
    when the image asks for more of a resource class than the flavor alone.
    """
    if not result.resources:
        return False
    held = _held_here(ctx)
    if held is None:
        _refuse(result, nit_decision.INCONCLUSIVE, 'resources-unknown',
                nit_decision.resource_reason(
                    result.resources,
                    _('whether this server holds it could not be decided')),
                detail='placement holds no allocations for the server on '
                       'this compute node')
        return True
    short = [need for need in result.resources
             if held[need.resource_class] < need.amount]
    if not short:
        return False
    result.missing = frozenset(n.resource_class for n in short)
    _refuse(result, nit_decision.REJECT, 'resources-not-held',
            nit_decision.resource_reason(short),
            detail='; '.join('%s:%d asked by %s, %d held' % (
                n.resource_class, n.amount,
                nit_traits.quote(n.cause())[1:-1], held[n.resource_class])
                for n in short))
    return True


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


#: The most invalid properties the decision log line names.
MAX_LOGGED_INVALID = 16
_FIX = _('Fix or remove the image property, then rebuild again.')
_FIX_MANY = _('Fix or remove the image property, or properties, then '
              'rebuild again.')


def _invalid_message(invalid):
    """The refusal naming the invalid properties, fit for nova's column."""
    names = [nit_traits.quote(prop) for prop, _why in invalid]
    if len(names) == 1:
        message = _('Image property %(property)s does not name a valid '
                    'trait: %(why)s. %(fix)s') % {
                        'property': names[0], 'why': invalid[0][1],
                        'fix': _FIX}
        if nit_decision.fits(message):
            return message
        return _('Image property %(property)s does not name a valid '
                 'trait. %(fix)s') % {'property': names[0], 'fix': _FIX}
    template = _('Image properties %(listed)s do not name valid traits. '
                 '%(fix)s')
    more = _('%(shown)s and %(count)d more')
    fixed = len((template % {'listed': more % {'shown': '', 'count': 999},
                             'fix': _FIX_MANY}).encode('utf-8'))
    shown = [names[0]]
    for name in names[1:]:
        if fixed + len(', '.join(shown + [name]).encode('utf-8')) > (
                nit_decision.MAX_REASON):
            break
        shown.append(name)
    if len(shown) < len(names):
        listed = more % {'shown': ', '.join(shown),
                         'count': len(names) - len(shown)}
    else:
        listed = _('%(names)s and %(last)s') % {
            'names': ', '.join(shown[:-1]), 'last': shown[-1]}
    return template % {'listed': listed, 'fix': _FIX_MANY}


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


def _run(name, option, ctx):
    strategy = strategies.load(name, option)
    try:
        return strategy.evaluate(ctx)
    except exception.PlacementVersionChanged as e:
        # NOTE(founders): placement was rolled back since the microversion was
        # negotiated; the session has negotiated again, so the strategy can ask
        # with what placement supports now (at most once).
        LOG.info('%s Asking again.', e.message)
        return strategy.evaluate(ctx)
