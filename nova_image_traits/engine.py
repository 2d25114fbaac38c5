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
from nova_image_traits import isolation
from nova_image_traits import placement
from nova_image_traits import reasons
from nova_image_traits.reasons import isolation as isolation_reason
from nova_image_traits.reasons import wording
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
    :returns: a :class:`~nova_image_traits.decision.Decision`, logged; the
        caller renders its reason with
        :meth:`~nova_image_traits.decision.Decision.reason_for`, saying
        whether it may read the host's detail
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
        _refuse(result, nit_decision.ERROR, wording.misconfigured(e))
    except Exception as e:
        # NOTE(founders): a bug, or an answer no check foresaw: say so, and
        # follow on_placement_error rather than let it reach nova.
        LOG.exception('Unexpected failure deciding the rebuild of %s',
                      request.instance_uuid)
        _refuse(result, nit_decision.ERROR, wording.internal_error(e))
        result.allowed = fails_open(conf)
    finally:
        if 'session' in state:
            result.requests = state['session'].requests
            result.known = getattr(state['session'], 'known', 0)
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


def _refuse(result, outcome, reason):
    """Refuse with ``outcome``, for ``reason`` (a :class:`.wording.Reason`)."""
    result.outcome, result.allowed = outcome, False
    (result.cause, result.message, result.detail,
     result.names_host) = reason


def _decide(request, conf, opts, client, result, state):
    asks = request.boot_asks(opts.judge_derived_requirements)
    result.derived = asks.derived
    result.requirements = asked = asks.requirements
    result.resources = asks.resources
    result.required = required = asks.required
    if asks.image.ignored:
        LOG.debug('Ignoring image properties %s: only the value "required" '
                  'is read, as in nova.',
                  ', '.join(nit_traits.quote(k) for k in asks.image.ignored))
    refusal = _refusal_before_placement(request, asks, opts)
    if refusal is not None:
        reason, result.unmet = refusal
        result.missing = frozenset(r.trait for r in result.unmet)
        _refuse(result, nit_decision.REJECT, reason)
        return
    forbidden = request.forbidden_aggregates
    if not asked and not asks.resources and not forbidden:
        result.detail = reasons.NOTHING_ASKED
        return

    try:
        if client is None:
            client = placement.get_client(conf, opts.decision_timeout)
        session = client.start(
            opts.decision_timeout, opts.max_url_length,
            version_ttl=opts.placement_version_ttl,
            global_request_id=request.global_request_id)
        state['session'] = session
        ctx = base.Context(request, required, session, asked)
        if _breaks_isolation(ctx, forbidden, result):
            return
        if not asked and not asks.resources:
            result.detail = isolation_reason.OUTSIDE
            return
        if _lacks_resources(ctx, result):
            return
        if not asked:
            result.detail = reasons.RESOURCES_HELD
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
                detail=reasons.fallback_detail(first, name, verdict))
    except exception.RequestTooLarge as e:
        _refuse(result, nit_decision.REJECT, wording.query_too_long(e))
        return
    except exception.PlacementError as e:
        _refuse(result, nit_decision.ERROR, wording.placement_failed(e))
        result.transient = e.transient
        result.allowed = opts.on_placement_error == 'accept'
        return

    result.missing, result.providers = verdict.missing, verdict.providers
    if verdict.outcome == nit_decision.ACCEPT:
        result.detail = verdict.detail
    elif verdict.outcome == nit_decision.REJECT:
        result.unmet = verdict.unmet or tuple(
            r for r in asked if r.trait in verdict.missing)
        _refuse(result, verdict.outcome, wording.unmet(
            strategies.load(result.decided_by), result.unmet,
            verdict.missing, verdict.detail))
    else:
        _refuse(result, verdict.outcome, wording.inconclusive(
            asked, required, verdict.detail))


def _refusal_before_placement(request, asks, opts):
    """``(reason, unmet)`` to refuse without placement, or None.

    An invalid ``trait:`` property, a request filter's refusal, more
    ``trait:`` properties than accepted, and a trait both required and
    forbidden, which placement refuses too; ``unmet`` holds the
    requirements refused, the required half of each conflicting pair.
    """
    if asks.image.invalid:
        return wording.invalid(asks.image.invalid), ()
    if asks.refusal:
        return wording.refused_by_request_filter(asks.refusal), ()
    if not asks.requirements and not asks.resources:
        return None
    if len(asks.image.required) > opts.max_image_traits:
        return wording.too_many(len(asks.image.required),
                                opts.max_image_traits), ()
    pairs = request.conflicts(asks.requirements)
    if not pairs:
        return None
    return (wording.conflicting(pairs),
            tuple(wanted for wanted, _no in pairs))


def _breaks_isolation(ctx, forbidden, result):
    """Refuse a rebuild a boot of the new image could not place here.

    Judged here, before and whatever the strategy, so that every strategy
    judges it alike; see :mod:`nova_image_traits.isolation`.
    """
    if not forbidden:
        return False
    found = isolation.breach(ctx, forbidden)
    if found is None:
        return False
    result.providers = tuple(found.providers)
    _refuse(result, nit_decision.REJECT, isolation_reason.isolated(found))
    return True


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
        _refuse(result, nit_decision.INCONCLUSIVE,
                wording.resources_unknown(result.resources))
        return True
    short = [need for need in result.resources
             if held[need.resource_class] < need.amount]
    if not short:
        return False
    result.missing = frozenset(n.resource_class for n in short)
    _refuse(result, nit_decision.REJECT,
            wording.resources_not_held(short, held))
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
    allocations = isolation.in_tree_only(ctx, allocations,
                                         ctx.request.compute_node_uuid)
    held = collections.Counter()
    for amounts in allocations.values():
        held.update(amounts)
    return held or None


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
