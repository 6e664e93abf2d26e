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
  // #op-Reshape opens that op's evidence; #status=disagrees&q=conv pre-sets the filters
  var hash=decodeURIComponent(location.hash.slice(1));
  if(hash.indexOf('op-')===0){
    var h=document.getElementById(hash); var d=h&&h.querySelector('details'); if(d) d.open=true;
  } else if(hash.indexOf('=')>0){
    hash.split('&').forEach(function(kv){
      var i=kv.indexOf('='), k=kv.slice(0,i), v=kv.slice(i+1);
      if(k==='q') q.value=v; if(k==='status') st.value=v;
    });
  }
  document.body.setAttribute('data-js','on');
  apply();
})();
