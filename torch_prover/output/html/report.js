(function(){
  var q=document.getElementById('q'), st=document.getElementById('st');
  var rows=[].slice.call(document.querySelectorAll('tbody.op'));
  var shown=document.getElementById('shown'), none=document.getElementById('none');
  function apply(){
    var text=q.value.trim().toLowerCase(), want=st.value, n=0;
    rows.forEach(function(r){
      var ok=(!want||r.getAttribute('data-status')===want)&&
             (!text||r.getAttribute('data-search').indexOf(text)>=0);
      r.hidden=!ok; if(ok) n++;
    });
    shown.textContent=n+' of '+rows.length; none.hidden=n>0;
  }
  q.addEventListener('input',apply); st.addEventListener('change',apply);
  [].forEach.call(document.querySelectorAll('[data-filter]'),function(b){
    b.addEventListener('click',function(){
      st.value=(st.value===b.getAttribute('data-filter'))?'':b.getAttribute('data-filter');
      apply(); document.getElementById('q').scrollIntoView({behavior:'smooth',block:'center'});
    });
  });
  // #op-Reshape opens that op's evidence -- on load (a deep link), on a click of a link
  // to it (a disagreement card's op, a failed case's op) and on any later hash change;
  // an op the filters hide is shown again first. #status=disagrees&q=conv pre-sets them.
  function openOp(){
    var hash=decodeURIComponent(location.hash.slice(1));
    var h=hash.indexOf('op-')===0&&document.getElementById(hash);
    if(!h) return hash;
    if(h.hidden){ q.value=''; st.value=''; apply(); }
    var d=h.querySelector('details'); if(d) d.open=true;
    h.scrollIntoView({block:'start'});
    return hash;
  }
  window.addEventListener('hashchange',openOp);
  [].forEach.call(document.querySelectorAll('a[href^="#op-"]'),function(a){
    a.addEventListener('click',function(){ setTimeout(openOp,0); });  // same hash: no event
  });
  var hash=openOp();
  if(hash.indexOf('op-')!==0&&hash.indexOf('=')>0){
    hash.split('&').forEach(function(kv){
      var i=kv.indexOf('='), k=kv.slice(0,i), v=kv.slice(i+1);
      if(k==='q') q.value=v; if(k==='status') st.value=v;
    });
  }
  document.body.setAttribute('data-js','on');
  apply();
})();
