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
"""A scheduler filter that checks a rebuild's new image traits.

Enable it in nova-scheduler::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = \
        nova_image_traits.filters.image_traits_filter.ImageTraitsFilter
    enabled_filters = ...,ImageTraitsFilter

(one line for the second ``available_filters``; nova loads filters by
class path and enables them by class name, and does not read the
``nova.scheduler.filters`` entry point).

On a rebuild with a new image, nova forces the current host and runs only
the filters with ``RUN_ON_REBUILD = True``; this one asks
:func:`nova_image_traits.engine.decide` whether that host satisfies the new
image's required traits. Every other request passes untouched.

The filter cannot see the original image (the API has already replaced it
in the request spec), so the ``reject`` strategy treats it as unknown; the
conductor hook (:mod:`nova_image_traits.conductor.hook`) can see it.
"""

from oslo_context import context as oslo_context
from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils

from nova_image_traits import conf as nit_conf
from nova_image_traits import engine
from nova_image_traits import nova_request

LOG = logging.getLogger(__name__)


class ImageTraitsFilter(filters.BaseHostFilter):
    """Keep the current host on rebuild only if it has the image's traits."""

    # Rebuild is the only request this filter is about.
    RUN_ON_REBUILD = True

    # On rebuild there is exactly one host and one instance; on every
    # other request the filter passes all hosts, so running it once per
    # request is enough either way.
    run_filter_once_per_request = True

    def __init__(self):
        super().__init__()
        # The scheduler builds its filters once, after parsing its
        # configuration: register [image_traits] there, not at import.
        nit_conf.register_opts(nova.conf.CONF)

    def filter_all(self, filter_obj_list, spec_obj):
        # NOTE(founders): BaseFilter.filter_all calls host_passes for every
        # host. On a request that is not a rebuild we have nothing to check, so
        # hand the list back as it is: the handler only iterates it once more
        # (list(objs)) and no per-host call is made.
        if not scheduler_utils.request_is_rebuild(spec_obj):
            return filter_obj_list
        hosts = list(filter_obj_list)
        if not _is_real_rebuild(hosts, spec_obj):
            return self._forged_rebuild(hosts, spec_obj)
        return super().filter_all(hosts, spec_obj)

    @staticmethod
    def _forged_rebuild(hosts, spec_obj):
        # NOTE(founders): nova 34's API drops the _nova* hints a user gives at
        # create, but a request spec that reaches the scheduler marked
        # _nova_check_type=['rebuild'] some other way (an older or patched API,
        # a hand-made RPC call) skips GET /allocation_candidates, where image
        # traits are checked at boot, and runs the rebuild filters on every
        # host. Deciding per host would send placement one decision per compute
        # node; deciding nothing and passing would let an image that requires
        # traits boot where nothing checked them. So: no placement request at
        # all, and refuse every host when the image requires traits (nothing
        # can be verified), pass them all otherwise (there is nothing to
        # check).
        instance = getattr(spec_obj, 'instance_uuid', None)
        try:
            required = _request(spec_obj, None, None).asks()
        except Exception:
            # NOTE(founders): filter_all must not raise either.
            LOG.exception('ImageTraitsFilter cannot read what the image of '
                          'instance %s asks.', instance)
            required = not engine.fails_open(nova.conf.CONF)
        if required:
            action = 'refusing every host because the image requires traits'
        else:
            action = 'passing every host: the image requires no traits'
        LOG.warning('Request for instance %(instance)s carries the rebuild '
                    'scheduler hint but is not a rebuild on its own host '
                    '(%(hosts)d candidate hosts, forced hosts %(forced)s); '
                    '%(action)s without asking placement.',
                    {'instance': instance, 'hosts': len(hosts),
                     'forced': _forced(spec_obj, 'force_hosts') or '-',
                     'action': action})
        return [] if required else hosts

    def host_passes(self, host_state, spec_obj):
        if not scheduler_utils.request_is_rebuild(spec_obj):
            return True
        try:
            return self._rebuild_passes(host_state, spec_obj)
        except Exception:
            # NOTE(founders): a filter that raises leaves the server stuck in
            # task state REBUILDING, so never let anything escape.
            LOG.exception('ImageTraitsFilter failed for host %(host)s, '
                          'instance %(instance)s.',
                          {'host': getattr(host_state, 'host', None),
                           'instance': getattr(spec_obj, 'instance_uuid',
                                               None)})
            return engine.fails_open(nova.conf.CONF)

    def _rebuild_passes(self, host_state, spec_obj):
        # By the time the scheduler runs, nova's API has already replaced
        # the image of the request spec (and the instance's image system
        # metadata) with the new one: the original image is unknown here.
        request = _request(spec_obj, host_state.uuid, host_state.host)
        if not request.judged():
            # Same shortcut as nova's own check: nothing required, nothing
            # to decide, no placement request.
            return True
        decision = engine.decide(request, conf=nova.conf.CONF)
        if not decision.allowed:
            # NOTE(founders): at INFO, unlike other filters' rejections: in a
            # filter-only deployment the user is told only "No valid host was
            # found", so this line is where the reason is.
            LOG.info('%(host_state)s fails image traits requirements on '
                     'rebuild of instance %(instance)s: %(reason)s',
                     {'host_state': host_state,
                      'instance': request.instance_uuid,
                      # The reason goes to the scheduler's log alone.
                      'reason': decision.reason_for(host_detail=True)})
        return decision.allowed


def _request(spec_obj, compute_node_uuid, host):
    return nova_request.rebuild_request(
        getattr(spec_obj, '_context', None) or oslo_context.get_current(),
        spec_obj, spec_obj.image if 'image' in spec_obj else None,
        compute_node_uuid, host, conf=nova.conf.CONF)


def _forced(spec_obj, field):
    return list(getattr(spec_obj, field) or []) if field in spec_obj else []


def _is_real_rebuild(hosts, spec_obj):
    """Whether a request marked as a rebuild is one nova's API made.

    ``API.rebuild`` forces the instance's own host and node, so nova's
    host manager hands the filters exactly that one host.

    ``HostState.instances`` is no proof either way: nova fills it
    asynchronously, and a live migration leaves it stale on the
    destination until the next ``_sync_scheduler_instance_info`` (every
    ``[DEFAULT] scheduler_instance_sync_interval`` seconds), because only
    the source compute reports the move, under its own name. A server
    rebuilt on its new host in that window would be refused.
    """
    forced_hosts = _forced(spec_obj, 'force_hosts')
    forced_nodes = _forced(spec_obj, 'force_nodes')
    if len(forced_hosts) != 1 or len(forced_nodes) > 1 or len(hosts) != 1:
        return False
    host = hosts[0]
    if getattr(host, 'host', None) != forced_hosts[0]:
        return False
    return (not forced_nodes or
            getattr(host, 'nodename', None) == forced_nodes[0])
