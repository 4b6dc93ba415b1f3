// skiff-lab: the Jobs sidebar. A left-sidebar panel listing every job of the run folders
// (served by the skiff.lab server extension), and a command that opens one job's live view
// in a main-area tab. Open tabs come back after a reload (the layout restorer).
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';

import { JobView } from './jobview';
import { JobsPanel } from './sidebar';

const OPEN = 'skiff:open-job';

const jobsIcon = new LabIcon({
  name: 'skiff:jobs',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" ' +
    'fill="#616161"><path d="M3 15h18l-3 5H6z"/><path d="M11 3v10H5z"/>' +
    '<path d="M13 6v7h5z"/></g></svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'skiff-lab:jobs',
  description: 'skiff jobs: every job of the run folders, live, in a sidebar',
  autoStart: true,
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null) => {
    const tracker = new WidgetTracker<MainAreaWidget<JobView>>({ namespace: 'skiff-job' });

    app.commands.addCommand(OPEN, {
      label: 'Open skiff job',
      caption: 'the live view of a skiff job in a tab',
      execute: args => {
        const id = String(args.id ?? '');
        const open = tracker.find(w => w.content.jobId === id);
        if (open) {
          app.shell.activateById(open.id);
          return open;
        }
        const widget = new MainAreaWidget({ content: new JobView(id) });
        widget.id = `skiff-job-tab-${id}`;
        widget.title.label = widget.content.title.label;
        widget.title.caption = widget.content.title.caption;
        widget.title.icon = jobsIcon;
        widget.title.closable = true;
        widget.content.title.changed.connect(() => {
          widget.title.label = widget.content.title.label;
        });
        void tracker.add(widget);
        app.shell.add(widget, 'main');
        app.shell.activateById(widget.id);
        return widget;
      }
    });

    const panel = new JobsPanel(id => void app.commands.execute(OPEN, { id }));
    panel.title.icon = jobsIcon;
    app.shell.add(panel, 'left', { rank: 250 });
    if (restorer) {
      restorer.add(panel, 'skiff-jobs');
      void restorer.restore(tracker, {
        command: OPEN,
        args: w => ({ id: w.content.jobId }),
        name: w => w.content.jobId
      });
    }
  }
};

export default plugin;
