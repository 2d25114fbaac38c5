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
"""Checks that read nova.conf alone: the scheduler filter, [image_traits].

Each function returns an ``oslo_upgradecheck.upgradecheck.Result``.
"""

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

FILTER_PATH = 'nova_image_traits.filters.image_traits_filter.ImageTraitsFilter'
FILTER_NAME = 'ImageTraitsFilter'
#: What nova's ``all_filters`` loads: nova's own filters, never ours.
ALL_FILTERS = 'nova.scheduler.filters.all_filters'

#: Strategies that can be inconclusive themselves, so that a fallback to
#: them may decide nothing (the engine then refuses the rebuild).
MAY_BE_INCONCLUSIVE = ('held_providers', 'in_tree_candidates',
                       'allocation_traits')

# NOTE(founders): nova's own options (nova/conf/scheduler.py), declared here
# with the same names, types and defaults so that nova.conf can be read without
# importing nova.
_FILTER_OPTS = [
    cfg.MultiStrOpt('available_filters', default=[ALL_FILTERS]),
    cfg.ListOpt('enabled_filters', default=[
        'ComputeFilter', 'ComputeCapabilitiesFilter',
        'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
        'ServerGroupAffinityFilter']),
]

Code = upgradecheck.Code
Result = upgradecheck.Result


def register_opts(conf):
    """Register nova's ``[filter_scheduler]`` filter lists on ``conf``."""
    conf.register_opts(_FILTER_OPTS, group='filter_scheduler')


def check_filter(conf, hooked_conductor=False):
    """Is ``ImageTraitsFilter`` both available and enabled?

    :param hooked_conductor: whether a conductor with the rebuild hook runs
        on this host, which makes the filter unnecessary
    """
    opts = conf.filter_scheduler
    available = FILTER_PATH in opts.available_filters
    enabled = FILTER_NAME in opts.enabled_filters
    if available and enabled:
        return Result(Code.SUCCESS, 'ImageTraitsFilter is in [filter_'
                      'scheduler] available_filters and enabled_filters.')
    if enabled:
        return Result(Code.FAILURE, (
            'ImageTraitsFilter is in [filter_scheduler] enabled_filters but '
            'not in available_filters: nova-scheduler will refuse to start. '
            'Add available_filters = %s (%s does not include it).') % (
                FILTER_PATH, ALL_FILTERS))
    if available:
        return Result(Code.WARNING, (
            'ImageTraitsFilter is in [filter_scheduler] available_filters '
            'but not in enabled_filters, so it never runs. Add %s to '
            'enabled_filters, or remove it from available_filters if the '
            'conductor hook decides.') % FILTER_NAME)
    if hooked_conductor:
        return Result(Code.SUCCESS, 'ImageTraitsFilter is not enabled; '
                      'the conductor hook decides (nova-image-traits-'
                      'conductor runs on this host).')
    return Result(Code.WARNING, (
        'ImageTraitsFilter is not enabled and no nova-image-traits-'
        'conductor runs on this host: if no other host runs the hook, '
        "nova's own rebuild check decides. This is expected on a host "
        'that runs neither nova-scheduler nor nova-conductor.'))


def check_options(conf):
    """Are the ``[image_traits]`` values consistent with each other?"""
    opts = conf.image_traits
    problems = []
    if opts.fallback_strategy == opts.strategy:
        if opts.strategy in MAY_BE_INCONCLUSIVE:
            problems.append(
                'fallback_strategy equals strategy (%s), which can be '
                'inconclusive: then nothing decides and the rebuild is '
                'refused' % opts.strategy)
    elif opts.fallback_strategy in MAY_BE_INCONCLUSIVE:
        problems.append(
            'fallback_strategy %s can be inconclusive itself; when both '
            'are, the rebuild is refused. root_traits or reject always '
            'decide' % opts.fallback_strategy)
    if opts.on_placement_error == 'accept' and opts.strategy == 'reject':
        problems.append(
            'on_placement_error = accept with strategy = reject: the '
            'strict strategy asks for refusals, while an internal error '
            'would let a rebuild through unchecked')
    if problems:
        return Result(Code.WARNING, '; '.join(problems) + '.')
    return Result(Code.SUCCESS, 'strategy = %s, fallback_strategy = %s, '
                  'on_placement_error = %s.' % (
                      opts.strategy, opts.fallback_strategy,
                      opts.on_placement_error))
